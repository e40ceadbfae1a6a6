//! Build facts the rest of the suite depends on.

// The value is a build-time constant on purpose: it is the flag under test.
#[allow(clippy::assertions_on_constants)]
#[test]
fn built_with_tokio_unstable() {
    // Determinism: turmoil seeds each host runtime's RNG only under
    // tokio_unstable; a user's RUSTFLAGS silently replaces
    // .cargo/config.toml, and determinism would quietly break.
    assert!(
        cfg!(tokio_unstable),
        "built without --cfg tokio_unstable: unset RUSTFLAGS or add --cfg tokio_unstable to it"
    );
}
