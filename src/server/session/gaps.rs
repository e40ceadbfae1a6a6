//! The guarded server's `gap` event: what a resume announces before it
//! replays the surviving events of a stream whose owed events were evicted.

use crate::guard::EventId;
use crate::protocol::sse;
use bytes::Bytes;

/// The SSE frame of a gap: `event: gap`, no `id:` (it is not an event of
/// the stream, and must not move the client's cursor), data
/// `{"missing":[[first,last],...]}` in the stream's event ids.
pub(crate) fn gap_frame(missing: &[(EventId, EventId)]) -> Bytes {
    sse::encode(None, Some(sse::GAP_EVENT), &sse::gap_data(missing), None)
}
