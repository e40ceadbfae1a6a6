//! JSON payloads kept as text: the `params` and `result` of a
//! [`super::Message`] are their JSON text, never a `serde_json::Value`
//! tree, unless a rare caller asks for one ([`Json::to_value`]).
//!
//! Two kinds of text: what a serializer wrote here (canonical: exactly the
//! bytes `Value`'s serializer writes for it — compact, object keys in
//! alphabetical order, as serde_json without `preserve_order` does), and a
//! span of a decoded body (any valid JSON, written back canonically). Reads
//! go by [`Json::get`] (a [`Raw`] span, looked up the way `Value::get`
//! does: the last of duplicate keys wins, any other shape is `None`) or by
//! typed deserialization ([`Json::parse`]).

use serde::de::{self, Deserialize, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// A JSON value as its text.
#[derive(Clone)]
pub struct Json {
    text: Arc<str>,
    /// `text` is what `Value`'s serializer writes for it.
    canonical: bool,
}

impl Json {
    /// The payload a serializable value makes. Its serialization must be
    /// canonical: compact, object keys (struct fields included) in
    /// alphabetical order; debug builds check it.
    pub fn ser<T: Serialize + ?Sized>(v: &T) -> Json {
        // Writing our own types to a string cannot fail (no non-string keys).
        let text = serde_json::to_string(v).unwrap_or_else(|_| "null".into());
        debug_assert_eq!(
            text,
            serde_json::from_str::<Value>(&text)
                .map(|v| v.to_string())
                .unwrap_or_default(),
            "a payload's serialization must be what Value writes (keys sorted)"
        );
        Json {
            text: text.into(),
            canonical: true,
        }
    }

    /// The payload of a `Value`.
    pub fn from_value(v: &Value) -> Json {
        Json {
            text: v.to_string().into(),
            canonical: true,
        }
    }

    /// A span of a decoded (validated) body.
    pub(crate) fn decoded(text: &str) -> Json {
        Json {
            text: text.into(),
            canonical: false,
        }
    }

    /// The text as it stands (a decoded payload's as it came).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The payload as a `Value` (for rare readers).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }

    /// Appends the canonical text: what `to_value().to_string()` gives.
    pub fn write_to(&self, out: &mut String) {
        if self.canonical {
            out.push_str(&self.text);
        } else {
            out.push_str(&self.to_value().to_string());
        }
    }

    /// The top-level value as a span.
    pub fn raw(&self) -> Raw<'_> {
        Raw(&self.text)
    }

    /// Field `key` of an object (`Value::get`'s answer, as a span).
    pub fn get(&self, key: &str) -> Option<Raw<'_>> {
        self.raw().get(key)
    }

    /// Typed deserialization straight from the text.
    pub fn parse<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.text)
    }

    /// What `serde_json::from_value(self.to_value())` gives, read straight
    /// from the text when it can be. The text is read first; only when that
    /// fails (a duplicate field, or a genuinely bad payload) is the `Value`
    /// built, so every decision (and every error) is the `Value` one.
    pub fn parse_as_value<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        match serde_json::from_str(&self.text) {
            Ok(t) => Ok(t),
            Err(_) => serde_json::from_value(self.to_value()),
        }
    }
}

impl From<Value> for Json {
    fn from(v: Value) -> Json {
        Json::from_value(&v)
    }
}

impl PartialEq for Json {
    /// Equal as JSON values (the texts may differ in spacing or key order).
    fn eq(&self, other: &Json) -> bool {
        self.text == other.text || self.to_value() == other.to_value()
    }
}

impl fmt::Debug for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Accepts any JSON value and keeps nothing. Deserializing it walks the
/// input exactly as deserializing a `Value` does (every number, string and
/// nesting level is parsed the same way), so it fails exactly when, and
/// with exactly the error that, `Value` would — without building the tree.
pub(crate) struct Valid;

impl<'de> Deserialize<'de> for Valid {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Valid, D::Error> {
        d.deserialize_any(Valid)
    }
}

impl<'de> Visitor<'de> for Valid {
    type Value = Valid;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Valid, E> {
        Ok(Valid)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Valid, E> {
        Ok(Valid)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Valid, E> {
        Ok(Valid)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Valid, E> {
        Ok(Valid)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Valid, E> {
        Ok(Valid)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Valid, E> {
        Ok(Valid)
    }
    fn visit_none<E: de::Error>(self) -> Result<Valid, E> {
        Ok(Valid)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Valid, D::Error> {
        Valid::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Valid, A::Error> {
        while seq.next_element::<Valid>()?.is_some() {}
        Ok(Valid)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Valid, A::Error> {
        while map.next_key::<Valid>()?.is_some() {
            map.next_value::<Valid>()?;
        }
        Ok(Valid)
    }
}

/// A span of valid JSON text: one value, without surrounding whitespace.
/// Its reads answer as `Value`'s would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raw<'a>(&'a str);

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_ws(b[i]) {
        i += 1;
    }
    i
}

/// The end of the string opening at `i` (just past its closing quote).
fn end_of_string(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The end of the value starting at `i`.
fn end_of_value(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => end_of_string(b, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut i = i;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = end_of_string(b, i);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            b.len()
        }
        _ => {
            let mut i = i;
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']') && !is_ws(b[i]) {
                i += 1;
            }
            i
        }
    }
}

impl<'a> Raw<'a> {
    /// The value in `text`, which must be valid JSON (surrounding
    /// whitespace allowed).
    pub(crate) fn of(text: &'a str) -> Raw<'a> {
        Raw(text.trim_matches(|c: char| c.is_ascii() && is_ws(c as u8)))
    }

    /// Its text.
    pub fn text(self) -> &'a str {
        self.0
    }

    /// An object.
    pub fn is_object(self) -> bool {
        self.0.starts_with('{')
    }

    /// An array.
    pub fn is_array(self) -> bool {
        self.0.starts_with('[')
    }

    /// `null`.
    pub fn is_null(self) -> bool {
        self.0 == "null"
    }

    /// An object's members in order, keys unescaped (empty if not an
    /// object).
    pub fn members(self) -> Members<'a> {
        Members {
            text: self.0,
            i: if self.is_object() { 1 } else { self.0.len() },
        }
    }

    /// An array's elements in order (empty if not an array).
    pub fn elements(self) -> Elements<'a> {
        Elements {
            text: self.0,
            i: if self.is_array() { 1 } else { self.0.len() },
        }
    }

    /// Field `key` of an object; the last of duplicates, as in `Value`.
    pub fn get(self, key: &str) -> Option<Raw<'a>> {
        let mut found = None;
        for (k, v) in self.members() {
            if k == key {
                found = Some(v);
            }
        }
        found
    }

    /// Element `i` of an array.
    pub fn index(self, i: usize) -> Option<Raw<'a>> {
        self.elements().nth(i)
    }

    /// A string's contents (unescaped).
    pub fn as_str(self) -> Option<Cow<'a, str>> {
        let inner = self.0.strip_prefix('"')?.strip_suffix('"')?;
        if inner.contains('\\') {
            serde_json::from_str::<String>(self.0).ok().map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(inner))
        }
    }

    /// A boolean.
    pub fn as_bool(self) -> Option<bool> {
        match self.0 {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    }

    /// A number that is a `u64` (`Value::as_u64`).
    pub fn as_u64(self) -> Option<u64> {
        if self.0.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
            serde_json::from_str(self.0).ok()
        } else {
            None
        }
    }

    /// The value as a payload of its own.
    pub fn to_json(self) -> Json {
        Json::decoded(self.0)
    }
}

/// An object's members (see [`Raw::members`]).
pub struct Members<'a> {
    text: &'a str,
    i: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = (Cow<'a, str>, Raw<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let b = self.text.as_bytes();
        let i = skip_ws(b, self.i);
        if b.get(i) != Some(&b'"') {
            self.i = b.len();
            return None;
        }
        let k_end = end_of_string(b, i);
        let key = Raw(self.text.get(i..k_end)?).as_str()?;
        let mut j = skip_ws(b, k_end);
        if b.get(j) != Some(&b':') {
            self.i = b.len();
            return None;
        }
        j = skip_ws(b, j + 1);
        let v_end = end_of_value(b, j);
        let value = Raw(self.text.get(j..v_end)?);
        let mut next = skip_ws(b, v_end);
        if b.get(next) == Some(&b',') {
            next += 1;
        }
        self.i = next;
        Some((key, value))
    }
}

/// An array's elements (see [`Raw::elements`]).
pub struct Elements<'a> {
    text: &'a str,
    i: usize,
}

impl<'a> Iterator for Elements<'a> {
    type Item = Raw<'a>;

    fn next(&mut self) -> Option<Raw<'a>> {
        let b = self.text.as_bytes();
        let i = skip_ws(b, self.i);
        if i >= b.len() || b[i] == b']' {
            self.i = b.len();
            return None;
        }
        let end = end_of_value(b, i);
        let value = Raw(self.text.get(i..end)?);
        let mut next = skip_ws(b, end);
        if b.get(next) == Some(&b',') {
            next += 1;
        }
        self.i = next;
        Some(value)
    }
}

/// The value of a JSON text, as `serde_json::from_str::<Value>` would
/// accept it, without building it: `None` where that fails.
pub fn raw_if_valid(text: &str) -> Option<Raw<'_>> {
    serde_json::from_str::<Valid>(text).ok()?;
    Some(Raw::of(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every read of a span answers as the same read of the `Value`.
    fn agree(text: &str, path: &[&str]) {
        let v: Value = serde_json::from_str(text).unwrap();
        let mut raw = Some(Raw::of(text));
        let mut val = Some(&v);
        for k in path {
            raw = raw.and_then(|r| match k.parse::<usize>() {
                Ok(i) => r.index(i),
                Err(_) => r.get(k),
            });
            val = val.and_then(|x| match k.parse::<usize>() {
                Ok(i) => x.get(i),
                Err(_) => x.get(k),
            });
        }
        assert_eq!(raw.is_some(), val.is_some(), "{text} {path:?}");
        if let (Some(r), Some(v)) = (raw, val) {
            assert_eq!(r.as_str().as_deref(), v.as_str(), "{text} {path:?}");
            assert_eq!(r.as_bool(), v.as_bool(), "{text} {path:?}");
            assert_eq!(r.as_u64(), v.as_u64(), "{text} {path:?}");
            assert_eq!(
                serde_json::from_str::<Value>(r.text()).unwrap(),
                *v,
                "{text} {path:?}"
            );
        }
    }

    #[test]
    fn spans_read_as_values_do() {
        let texts = [
            r#"{"a":1,"b":"x","a":2}"#,
            r#" { "a" : [ 1 , {"b":"\"}]"} , 3 ] , "c\u0041" : true } "#,
            r#"{"s":"a\u00e9\n","n":-0,"f":1.5,"e":1e2,"big":18446744073709551615,"neg":-3}"#,
            r#"[{"x":null},[],{},"]"]"#,
            r#"{"":{"k":[{"t":"v"}]},"a\\":false}"#,
            r#""top""#,
            "17",
        ];
        let paths: &[&[&str]] = &[
            &[],
            &["a"],
            &["a", "1", "b"],
            &["a", "0"],
            &["b"],
            &["cA"],
            &["s"],
            &["n"],
            &["f"],
            &["e"],
            &["big"],
            &["neg"],
            &["0", "x"],
            &["1"],
            &["2"],
            &["3"],
            &["", "k", "0", "t"],
            &["a\\"],
            &["missing"],
        ];
        for t in texts {
            for p in paths {
                agree(t, p);
            }
        }
    }

    #[test]
    fn valid_fails_where_value_fails_with_the_same_error() {
        for text in [
            "",
            "{",
            "[1,]",
            r#"{"a":1e400}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":01}"#,
            "{\"a\":\"\u{1}\"}",
            r#"{"a":1} x"#,
            &"[".repeat(200),
            r#"{"a" 1}"#,
            r#"{"a":tru}"#,
        ] {
            let v = serde_json::from_str::<Value>(text).map(|_| ());
            let w = serde_json::from_str::<Valid>(text).map(|_| ());
            assert_eq!(
                v.map_err(|e| e.to_string()),
                w.map_err(|e| e.to_string()),
                "{text}"
            );
        }
        for bytes in [&b"{\"a\":\"\xff\"}"[..], b"\xef\xbb\xbf{}"] {
            let v = serde_json::from_slice::<Value>(bytes).map(|_| ());
            let w = serde_json::from_slice::<Valid>(bytes).map(|_| ());
            assert_eq!(v.map_err(|e| e.to_string()), w.map_err(|e| e.to_string()));
        }
    }

    #[test]
    fn decoded_payloads_write_back_canonically() {
        let j = Json::decoded(r#"{ "b" : 1.0, "a":"\u0041" }"#);
        let mut out = String::new();
        j.write_to(&mut out);
        assert_eq!(out, json!({"a": "A", "b": 1.0}).to_string());
        assert_eq!(j, Json::from(json!({"b": 1.0, "a": "A"})));
    }
}
