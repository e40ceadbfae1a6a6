//! Event ids as the client keeps them. SSE ids are opaque strings: the
//! built-in server's are decimal numbers, which the client orders and
//! compares as numbers; another server's may be anything (rmcp's are
//! `<index>/<request>`). The client numbers each opaque id it meets, in
//! the order it first sees them, above every decimal id, and sends a
//! server back exactly the string it sent: so "the newest id seen on a
//! stream" keeps its meaning (a replayed id keeps its number; an id first
//! seen later gets a larger one) and `Last-Event-ID` is always the
//! server's own.

use std::collections::BTreeMap;
use std::rc::Rc;

/// The first number given to an opaque id.
const OPAQUE: u64 = 1 << 62;

/// A client's opaque event ids, numbered.
#[derive(Default)]
pub(super) struct EventIds {
    opaque: Vec<Rc<str>>,
    numbers: BTreeMap<Rc<str>, u64>,
}

impl EventIds {
    /// The number of the id `raw`: itself if decimal, else its place.
    pub fn number(&mut self, raw: &str) -> u64 {
        if let Ok(n) = raw.parse::<u64>() {
            if n < OPAQUE {
                return n;
            }
        }
        if let Some(&n) = self.numbers.get(raw) {
            return n;
        }
        let n = OPAQUE + self.opaque.len() as u64;
        let raw: Rc<str> = raw.into();
        self.opaque.push(raw.clone());
        self.numbers.insert(raw, n);
        n
    }

    /// The id as the server wrote it.
    pub fn wire(&self, n: u64) -> String {
        match n.checked_sub(OPAQUE) {
            Some(i) => self
                .opaque
                .get(i as usize)
                .map_or_else(|| n.to_string(), |s| s.to_string()),
            None => n.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_ids_are_themselves_and_opaque_ones_round_trip_in_arrival_order() {
        let mut ids = EventIds::default();
        assert_eq!(ids.number("42"), 42);
        let a = ids.number("3/0");
        let b = ids.number("0/1");
        assert!(a >= OPAQUE && b > a, "arrival order: {a} then {b}");
        assert_eq!(ids.number("3/0"), a, "a replayed id keeps its number");
        assert_eq!(ids.wire(a), "3/0");
        assert_eq!(ids.wire(b), "0/1");
        assert_eq!(ids.wire(42), "42");
        // A decimal id too large for the numbering is opaque too.
        let big = ids.number(&u64::MAX.to_string());
        assert_eq!(ids.wire(big), u64::MAX.to_string());
    }
}
