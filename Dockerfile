# mcp-chaos in a container, for sweeps on a cluster (docs/sharding.md).
#   docker build -t mcp-chaos .
#   docker run --rm -v "$PWD/out:/out" mcp-chaos sweep --scenario sims/mixed-fleet.toml \
#       --seeds 0..50 --shard 1/4 --out /out/part-1.json
# The image holds the binary and the scenarios in sims/; write results to a
# mounted volume.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
# .cargo/config.toml comes along: it sets --cfg tokio_unstable, which the
# simulator's determinism needs. Do not set RUSTFLAGS here: it would
# replace that flag.
COPY . .
RUN cargo build --release --locked --bin mcp-chaos

FROM debian:bookworm-slim
COPY --from=build /src/target/release/mcp-chaos /usr/local/bin/mcp-chaos
COPY --from=build /src/sims /opt/mcp-chaos/sims
WORKDIR /opt/mcp-chaos
ENTRYPOINT ["mcp-chaos"]
CMD ["--help"]
