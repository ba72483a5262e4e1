//! `nrt-sim decode`: raw 16-byte entries from a hex dump, decoded field by
//! field with nrt-core's own decoders: [`Notification`] for INFER_STATUS
//! rings, [`ErrorEntry`] for the error ring.
//!
//! Input is hex digits, 32 per entry; whitespace anywhere is ignored, so a dump
//! can be pasted as `00 00 00 84 ...` or as one run of digits per entry.

use std::fmt::Write as _;

use nrt_core::nq::{CustomKind, ErrorEntry, Notification, RawEntry, Subtype, ERROR_NQ, INFER_STATUS_NQS};
use serde_json::{json, Value};

/// Which layout to decode with; the ring chooses the lane, seed §3 QUIRK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingKind {
    /// An INFER_STATUS ring, NQ 4..8.
    Infer,
    /// The error ring, NQ 2.
    Error,
}

/// Why [`parse_hex`] refused its input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HexError {
    /// A character that is neither a hex digit nor white space, at its
    /// 1-based position among the input's characters.
    NotHex {
        /// The character.
        ch: char,
        /// Its position, from 1.
        at: usize,
    },
    /// No hex digit at all.
    Empty,
    /// A count of digits that is not a whole number of 32-digit entries.
    Partial {
        /// The digits given.
        digits: usize,
    },
}

impl core::fmt::Display for HexError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            HexError::NotHex { ch, at } => write!(f, "'{ch}' at character {at} is not a hex digit"),
            HexError::Empty => f.write_str("no hex digits: give 32 hex digits (16 bytes) per entry, or '-' for stdin"),
            HexError::Partial { digits } => write!(
                f,
                "{digits} hex digits is not a whole number of 16-byte entries (32 digits each): {} full entr{} and {} \
                 digit(s) left over",
                digits / 32,
                if digits / 32 == 1 { "y" } else { "ies" },
                digits % 32
            ),
        }
    }
}

impl std::error::Error for HexError {}

/// Parse hex digits into 16-byte entries; the error names the bad character or
/// the bad length.
pub fn parse_hex(input: &str) -> Result<Vec<[u8; 16]>, HexError> {
    let mut nibbles = Vec::new();
    for (i, ch) in input.chars().enumerate() {
        if ch.is_whitespace() {
            continue;
        }
        match ch.to_digit(16) {
            Some(d) => nibbles.push(d as u8),
            None => return Err(HexError::NotHex { ch, at: i + 1 }),
        }
    }
    if nibbles.is_empty() {
        return Err(HexError::Empty);
    }
    if nibbles.len() % 32 != 0 {
        return Err(HexError::Partial { digits: nibbles.len() });
    }
    Ok(nibbles
        .chunks_exact(32)
        .map(|c| {
            let mut e = [0u8; 16];
            for (b, pair) in e.iter_mut().zip(c.chunks_exact(2)) {
                *b = (pair.first().copied().unwrap_or(0) << 4) | pair.get(1).copied().unwrap_or(0);
            }
            e
        })
        .collect())
}

fn hex(e: &[u8; 16]) -> String {
    e.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ")
}

fn tag_name(tag: u8) -> String {
    if tag == ERROR_NQ {
        return "the error ring".into();
    }
    match INFER_STATUS_NQS.iter().position(|n| *n == tag).and_then(nrt_core::nq::Engine::from_index) {
        Some(e) => format!("INFER_STATUS {}", e.name()),
        None if tag == nrt_core::nq::entry::CAYMAN_CUSTOM_NQ_TAG => "the cayman custom fixup's tag".into(),
        None => "no runtime ring".into(),
    }
}

fn custom_text(n: &Notification) -> String {
    match n.custom() {
        CustomKind::TensorCompletion { var_id } => format!("tensor completion of var id {var_id}"),
        CustomKind::Diagnostic { sub_id, payload } => format!("diagnostic sub-id {sub_id}, payload {payload}"),
        CustomKind::Invalid { sub_id } => format!("invalid sub-id {sub_id} (the table has 11)"),
    }
}

/// The decoded entries as text.
pub fn text(entries: &[[u8; 16]], ring: RingKind) -> String {
    let mut o = String::new();
    for (i, e) in entries.iter().enumerate() {
        let _ = writeln!(o, "entry {i}: {}", hex(e));
        match ring {
            RingKind::Infer => {
                let raw = RawEntry::from_array(e);
                let n = Notification::parse(raw);
                let _ = writeln!(
                    o,
                    "  subtype {} {}, NQ-id tag {} ({}), phase {}, debug hint {}, custom sub-id {}, isa-line lo {}",
                    n.subtype.value(),
                    n.subtype.name(),
                    n.nq_tag,
                    tag_name(n.nq_tag),
                    u8::from(raw.phase()),
                    n.debug_hint,
                    n.custom_sub_id,
                    n.isa_line_lo
                );
                if n.subtype == Subtype::Custom {
                    let _ = writeln!(o, "  custom: {}", custom_text(&n));
                }
                let _ = writeln!(o, "  device timestamp {} (0x{:x})", n.device_ts, n.device_ts);
            }
            RingKind::Error => {
                let x = ErrorEntry::from_array(e);
                let class = x.class();
                let status =
                    class.status().map_or("status unchanged".to_string(), |s| format!("{} {}", s.code(), s.name()));
                let _ = writeln!(
                    o,
                    "  error subtype {} ({:?}), class {} -> {status}",
                    x.subtype(),
                    x.infer_error_subtype(),
                    class.name()
                );
                let _ = writeln!(
                    o,
                    "  error id {}, flags 0x{:02x}, metadata 0x{:04x}, phase {}, NQ-id tag {}",
                    x.error_id(),
                    x.flags(),
                    x.metadata(),
                    u8::from(x.phase()),
                    e[3] & 0x1F
                );
                let _ = writeln!(o, "  device timestamp {} (0x{:x})", x.device_ts(), x.device_ts());
            }
        }
    }
    o
}

/// The decoded entries as a JSON array.
pub fn json(entries: &[[u8; 16]], ring: RingKind) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|e| match ring {
                RingKind::Infer => {
                    let raw = RawEntry::from_array(e);
                    let n = Notification::parse(raw);
                    json!({
                        "hex": hex(e),
                        "ring": "infer",
                        "subtype": n.subtype.value(),
                        "subtype_name": n.subtype.name(),
                        "nq_tag": n.nq_tag,
                        "phase": raw.phase(),
                        "debug_hint": n.debug_hint,
                        "custom_sub_id": n.custom_sub_id,
                        "custom": (n.subtype == Subtype::Custom).then(|| custom_text(&n)),
                        "isa_line_lo": n.isa_line_lo,
                        "device_ts": n.device_ts,
                    })
                }
                RingKind::Error => {
                    let x = ErrorEntry::from_array(e);
                    let class = x.class();
                    json!({
                        "hex": hex(e),
                        "ring": "error",
                        "subtype": x.subtype(),
                        "subtype_name": format!("{:?}", x.infer_error_subtype()),
                        "error_class": class.name(),
                        "status": class.status().map(|s| s.code()),
                        "status_name": class.status().map(|s| s.name()),
                        "error_id": x.error_id(),
                        "flags": x.flags(),
                        "metadata": x.metadata(),
                        "phase": x.phase(),
                        "device_ts": x.device_ts(),
                    })
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_with_spaces_and_refuses_bad_input() {
        let e = parse_hex("00000084 00000200 1027000000000000").unwrap();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0][3], 0x84);
        assert_eq!(e[0][6], 0x02);
        let bad = parse_hex("0g").unwrap_err();
        assert_eq!(bad, HexError::NotHex { ch: 'g', at: 2 });
        assert_eq!(bad.to_string(), "'g' at character 2 is not a hex digit");
        let short = parse_hex("00").unwrap_err();
        assert_eq!(short, HexError::Partial { digits: 2 });
        assert_eq!(
            short.to_string(),
            "2 hex digits is not a whole number of 16-byte entries (32 digits each): 0 full entries and 2 digit(s) \
             left over"
        );
        let one_over = parse_hex(&"0".repeat(33)).unwrap_err();
        assert!(one_over.to_string().contains(": 1 full entry and 1 digit(s) left over"), "{one_over}");
        let none = parse_hex("  ").unwrap_err();
        assert_eq!(none, HexError::Empty);
        assert_eq!(none.to_string(), "no hex digits: give 32 hex digits (16 bytes) per entry, or '-' for stdin");
        let t = text(&e, RingKind::Infer);
        assert!(t.contains("subtype 2 START"), "{t}");
        assert!(t.contains("NQ-id tag 4 (INFER_STATUS PE)"), "{t}");
        assert!(t.contains("device timestamp 10000"), "{t}");
    }
}
