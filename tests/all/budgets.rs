//! `serve`'s tables bounded per principal first: one token's traffic
//! evicts only its own entries until the total forces a fair choice.

use crate::serve::{initialize, Conn, Served};

fn append(c: &mut Conn, sid: &str, token: &str, id: u64, tag: &str) -> String {
    let auth = format!("Bearer {token}");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"ledger_append","arguments":{{"tag":"{tag}","chunks":1}}}}}}"#
    );
    let r = c.send(
        "POST",
        &[
            ("mcp-session-id", sid),
            ("authorization", auth.as_str()),
            ("idempotency-key", tag),
        ],
        &body,
    );
    assert_eq!(r.status, 200, "{r:?}");
    r.body
}

fn executions(c: &mut Conn, sid: &str, token: &str, tag: &str) -> String {
    let auth = format!("Bearer {token}");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"ledger_read","arguments":{{"tag":"{tag}"}}}}}}"#
    );
    let r = c.send(
        "POST",
        &[("mcp-session-id", sid), ("authorization", auth.as_str())],
        &body,
    );
    assert_eq!(r.status, 200, "{r:?}");
    r.body
}

/// Token A makes one keyed call; token B then makes 3,000 (some 6 MB of
/// keys, effects and tags, past its own share). A's key is still known:
/// re-sent, it is answered from the key table and the tool ran once.
#[test]
fn one_tokens_keys_survive_anothers_flood() {
    for arm in ["keys", "guarded"] {
        let s = Served::start(&["--server", arm]);
        let mut a = s.connect();
        let mut b = s.connect();
        let auth_a = [("authorization", "Bearer token-a")];
        let sid_a = initialize(&mut a, &auth_a);
        let sid_b = initialize(&mut b, &[("authorization", "Bearer token-b")]);
        append(&mut a, &sid_a, "token-a", 1, "a-key");
        for i in 0..3_000 {
            append(
                &mut b,
                &sid_b,
                "token-b",
                10 + i,
                &format!("b-key-{i:05}-{}", "x".repeat(200)),
            );
        }
        append(&mut a, &sid_a, "token-a", 2, "a-key");
        let read = executions(&mut a, &sid_a, "token-a", "a-key");
        assert!(
            read.contains(r#"\"a-key\":1"#) || read.contains(r#""a-key":1"#),
            "{arm}: A's tool ran once: {read}"
        );
    }
}

/// The keyed load: 200 clients, each under its own token and session,
/// make 20 keyed calls at once; then each re-sends its 20 keys. The
/// ledger's budget holds them all: every re-send is answered from the key
/// table (the tool ran once per key), none forgotten.
#[test]
fn a_200_client_keyed_load_forgets_none_of_its_keys() {
    let s = Served::start(&["--server", "keys"]);
    let forgotten: usize = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..200)
            .map(|i| {
                let s = &s;
                scope.spawn(move || {
                    let token = format!("load-{i:03}");
                    let mut c = s.connect();
                    let sid = initialize(&mut c, &[("authorization", &format!("Bearer {token}"))]);
                    let tag = |n: usize| format!("c{i:03}-op{n:02}");
                    for n in 0..20 {
                        append(&mut c, &sid, &token, n as u64, &tag(n));
                    }
                    (c, sid, token, (0..20).map(tag).collect::<Vec<_>>())
                })
            })
            .collect();
        let done: Vec<_> = clients.into_iter().map(|c| c.join().unwrap()).collect();
        done.into_iter()
            .map(|(mut c, sid, token, tags)| {
                tags.iter()
                    .enumerate()
                    .filter(|(n, tag)| {
                        append(&mut c, &sid, &token, 100 + *n as u64, tag);
                        let read = executions(&mut c, &sid, &token, tag);
                        !read.contains(&format!(r#"\"{tag}\":1"#))
                    })
                    .count()
            })
            .sum()
    });
    assert_eq!(forgotten, 0, "keys forgotten of 4,000");
}
