//! The session hazards: a legacy session id on the streamable endpoint, a
//! second standalone GET.

use super::ctx::{Ctx, Step, Verdict};
use super::peer::{clip, initialize_request, Session};
use crate::protocol::jsonrpc::Message;
use crate::protocol::mcp;

impl Ctx<'_> {
    pub(super) async fn legacy_session(&self) -> Step<(Verdict, String)> {
        let legacy = &self.legacy;
        let mut sse = match self.peer.get_at(legacy).await {
            Ok(r) if r.status.is_success() && r.is_sse() => r,
            Ok(r) => {
                return Err(format!(
                    "no legacy HTTP+SSE endpoint: GET {legacy} answered {}",
                    r.status.as_u16()
                ))
            }
            Err(e) => return Err(format!("no legacy HTTP+SSE endpoint at {legacy}: {e}")),
        };
        sse.read_until(self.peer.within(self.ms(2000)), |g| g.event == "endpoint")
            .await;
        let Some(endpoint) = sse.seen.iter().find(|g| g.event == "endpoint") else {
            return Err(format!("GET {legacy} sent no endpoint event"));
        };
        // Wherever the endpoint points, the connection to it passes the
        // same loopback check as --url.
        let post_to = legacy.join(endpoint.data.trim())?;
        let Some(sid) = post_to
            .path
            .split(['?', '&'])
            .find_map(|p| p.strip_prefix("sessionId="))
        else {
            return Err(format!(
                "the endpoint event names no sessionId: {:?}",
                clip(&endpoint.data)
            ));
        };
        let sid = sid.to_string();
        // Initialize through the legacy transport; answers come on `sse`.
        let init_id = self.peer.fresh_id();
        let legacy_session = Session {
            id: None,
            version: mcp::LEGACY_VERSION.into(),
            modern: None,
        };
        let init = initialize_request(&init_id, mcp::LEGACY_VERSION);
        let send = |m: Message| {
            self.peer.send(
                crate::client::http::Outgoing::post(None, &m),
                Some(&post_to),
            )
        };
        send(init)
            .await
            .map_err(|e| format!("legacy initialize: {e}"))?;
        sse.read_response(&init_id, self.peer.within(self.wait))
            .await;
        if sse.response(&init_id).is_none() {
            return Err(format!(
                "the legacy session was not initialized: {}",
                sse.describe()
            ));
        }
        send(Message::Notification {
            method: mcp::INITIALIZED.into(),
            params: None,
        })
        .await
        .map_err(|e| format!("legacy initialized: {e}"))?;
        let crossed = Session {
            id: Some(sid.clone()),
            ..legacy_session
        };
        let id = self.peer.fresh_id();
        let list = Message::Request {
            id: id.clone(),
            method: mcp::TOOLS_LIST.into(),
            params: None,
        };
        let mut r = self
            .peer
            .post(&crossed, &list, None)
            .await
            .map_err(|e| e.to_string())?;
        r.read_response(&id, self.peer.within(self.wait)).await;
        drop(sse);
        let story = format!(
            "POST tools/list on {} with legacy session {}: {}",
            self.peer.target(),
            clip(&sid),
            r.describe()
        );
        let served = r.status.is_success()
            && matches!(
                r.response(&id).and_then(|g| g.msg.as_ref()),
                Some(Message::Result { .. })
            );
        Ok(if served {
            (Verdict::Present, format!("served ({story})"))
        } else {
            (Verdict::Absent, format!("refused ({story})"))
        })
    }

    pub(super) async fn second_get(&self) -> Step<(Verdict, String)> {
        let s = self.session().await?;
        let first = self.peer.get(&s, None).await.map_err(|e| e.to_string())?;
        if !first.status.is_success() {
            self.peer.end(&s).await;
            return Err(format!(
                "the server offers no standalone stream: GET {}",
                first.describe()
            ));
        }
        let mut second = self.peer.get(&s, None).await.map_err(|e| e.to_string())?;
        if !second.status.is_success() {
            second
                .read_until(self.peer.within(self.wait), |_| false)
                .await;
        }
        let story = format!(
            "first GET {}, second GET {}",
            first.status.as_u16(),
            second.describe()
        );
        let both = second.status.is_success();
        drop((first, second));
        self.peer.end(&s).await;
        Ok(if both {
            (Verdict::Present, format!("both accepted ({story})"))
        } else {
            (Verdict::Absent, format!("the second was refused ({story})"))
        })
    }
}
