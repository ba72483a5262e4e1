//! Status codes by name, and the decode of a 16-byte entry.

use std::ffi::{c_char, c_int, CString};
use std::sync::OnceLock;

use nrt_core::nq::Notification;
use nrt_core::NrtStatus;

/// A decoded 16-byte INFER_STATUS entry.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct nrt_entry {
    /// `data[2] >> 4`.
    pub debug_hint: u8,
    /// `data[3] & 0x1F`.
    pub nq_tag: u8,
    /// Bit 7 of `data[3]`: the ring's phase bit.
    pub phase: u8,
    /// `u16 @4`.
    pub custom_sub_id: u16,
    /// `u16 @6`.
    pub subtype: u16,
    /// `u64 @8`.
    pub device_ts: u64,
}

struct StatusStrings {
    names: Vec<(u32, CString, CString)>,
    unknown: CString,
    unknown_desc: CString,
}

fn strings() -> &'static StatusStrings {
    static S: OnceLock<StatusStrings> = OnceLock::new();
    S.get_or_init(|| StatusStrings {
        names: NrtStatus::ALL
            .iter()
            .map(|s| {
                (
                    s.code(),
                    CString::new(s.name()).unwrap_or_default(),
                    CString::new(s.description()).unwrap_or_default(),
                )
            })
            .collect(),
        unknown: CString::new(NrtStatus::Other(u32::MAX).name()).unwrap_or_default(),
        unknown_desc: CString::new(NrtStatus::Other(u32::MAX).description()).unwrap_or_default(),
    })
}

/// The status's name, such as `"NRT_TIMEOUT"`, or `"UNKNOWN"`. Static; never null.
#[no_mangle]
pub extern "C" fn nrt_status_name(status: u32) -> *const c_char {
    let s = strings();
    s.names.iter().find(|(c, _, _)| *c == status).map_or(s.unknown.as_ptr(), |(_, n, _)| n.as_ptr())
}

/// The status's one-line description. Static; never null.
#[no_mangle]
pub extern "C" fn nrt_status_description(status: u32) -> *const c_char {
    let s = strings();
    s.names.iter().find(|(c, _, _)| *c == status).map_or(s.unknown_desc.as_ptr(), |(_, _, d)| d.as_ptr())
}

/// The status's priority for multi-core reconciliation: 0 none, 1 medium, 2
/// high, 3 critical.
#[no_mangle]
pub extern "C" fn nrt_status_priority(status: u32) -> u32 {
    NrtStatus::from_code(status).priority() as u32
}

/// Decode 16 bytes of an INFER_STATUS entry. Returns 0, or -1 for a null pointer.
///
/// # Safety
/// `bytes` is null or points to 16 readable bytes; `out` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_decode_entry(bytes: *const u8, out: *mut nrt_entry) -> c_int {
    if bytes.is_null() {
        return -1;
    }
    // SAFETY: non-null, and the caller guarantees 16 readable bytes.
    let raw: [u8; 16] = unsafe { bytes.cast::<[u8; 16]>().read_unaligned() };
    // SAFETY: null-checked; the caller guarantees it is writable.
    let Some(out) = (unsafe { out.as_mut() }) else { return -1 };
    let n = Notification::decode(&raw);
    *out = nrt_entry {
        debug_hint: n.debug_hint,
        nq_tag: n.nq_tag,
        phase: u8::from(raw[3] & 0x80 != 0),
        custom_sub_id: n.custom_sub_id,
        subtype: n.subtype.value(),
        device_ts: n.device_ts,
    };
    0
}
