//! The driver's datastore layout: where each counter of a process's datastore
//! lives. Driver: share/neuron_driver_shared.h, `nds_header_t` and the
//! `NDS_*_START` macros; neuron_ds.c, `get_neuroncore_counter_value`.
//!
//! All counters are little-endian `u64`:
//!
//! | section | start | size | what |
//! |---|---|---|---|
//! | header | 0 | 8 | `char signature[4]`, `int version` |
//! | ND counters | 8 | 31 x 8 | `NDS_ND_COUNTER_*` |
//! | NC counters | 256 | 4 x 31 x 8 | NCs 0..=3, ids 0..31 |
//! | runtime objects | 1248 | to 44588 | not written here |
//! | old extension | 44588 | 11296 | unused |
//! | extended NC counters | 55936 | 4 x 64 x 8 | NCs 0..=3, ids 31..95 |
//! | extra NCs | 57984 | 12 x 96 x 8 | NCs 4..=15, ids 0..95 and a pad word |
//!
//! The ids are [`nrt_core::counters::id`]'s; this module only places them.

use nrt_core::counters::id;

/// `NDS_HEADER_START`: the header is the datastore's first bytes.
pub const NDS_HEADER_START: usize = 0;
/// `sizeof(nds_header_t)`: `char signature[4]` and `int version`.
pub const NDS_HEADER_SIZE: usize = 8;
/// `offsetof(nds_header_t, signature)`.
pub const NDS_SIGNATURE_OFFSET: usize = NDS_HEADER_START;
/// `offsetof(nds_header_t, version)`.
pub const NDS_VERSION_OFFSET: usize = NDS_SIGNATURE_OFFSET + 4;
/// The header's signature bytes.
pub const NDS_SIGNATURE: [u8; 4] = *b"nds\0";
/// `NDS_ND_COUNTER_COUNT`: the 13 named device counters and 18 reserved.
pub const NDS_ND_COUNTER_COUNT: usize = 31;
/// `NDS_ND_COUNTERS_START`.
pub const NDS_ND_COUNTERS_START: usize = NDS_HEADER_START + NDS_HEADER_SIZE;
/// `NDS_NEURONCORE_COUNTERS_START`: the original per-NC section.
pub const NDS_NEURONCORE_COUNTERS_START: usize = NDS_ND_COUNTERS_START + NDS_ND_COUNTER_COUNT * 8;
/// `NDS_MAX_NEURONCORE_COUNT`: NCs with a slot in the original section.
pub const NDS_MAX_NEURONCORE_COUNT: usize = 4;
/// `NDS_EXT_MAX_NEURONCORE_COUNT`: further NCs, in their own section.
pub const NDS_EXT_MAX_NEURONCORE_COUNT: usize = 12;
/// NCs a datastore has counters for.
pub const NDS_NC_MAX: usize = NDS_MAX_NEURONCORE_COUNT + NDS_EXT_MAX_NEURONCORE_COUNT;
/// `NDS_EXT_OFFSET_OLD`: the end of the runtime's objects, hard-coded by the header.
pub const NDS_EXT_OFFSET_OLD: usize = 44588;
/// `NDS_EXT_SECTION_SIZE_OLD`: the old extension.
pub const NDS_EXT_SECTION_SIZE_OLD: usize = (65 * NDS_MAX_NEURONCORE_COUNT + 96 * NDS_EXT_MAX_NEURONCORE_COUNT) * 8;
/// `NDS_EXT_ALIGNMENT`.
pub const NDS_EXT_ALIGNMENT: usize = 64;

/// `NDS_ALIGN(v)`: `v` rounded up to [`NDS_EXT_ALIGNMENT`].
pub const fn nds_align(v: usize) -> usize {
    v.div_ceil(NDS_EXT_ALIGNMENT) * NDS_EXT_ALIGNMENT
}

/// `NDS_EXT_OFFSET` = `NDS_EXT_NEURONCORE_COUNTERS_START`.
pub const NDS_EXT_NEURONCORE_COUNTERS_START: usize = nds_align(NDS_EXT_OFFSET_OLD + NDS_EXT_SECTION_SIZE_OLD);
/// `NDS_EXT_NEURONCORE_NC_DATA_START`: the extra NCs' section.
pub const NDS_EXT_NEURONCORE_NC_DATA_START: usize =
    nds_align(NDS_EXT_NEURONCORE_COUNTERS_START + id::EXT_NC_COUNTER_COUNT * NDS_MAX_NEURONCORE_COUNT * 8);
/// `NDS_EXT_NEURONCORE_NC_DATA_COUNT`: words per extra NC, with a pad.
pub const NDS_EXT_NEURONCORE_NC_DATA_COUNT: usize = id::TOTAL_NC_COUNTER_COUNT + 1;
/// The end of the last section.
pub const NDS_END: usize =
    NDS_EXT_NEURONCORE_NC_DATA_START + NDS_EXT_MAX_NEURONCORE_COUNT * NDS_EXT_NEURONCORE_NC_DATA_COUNT * 8;

const _: () = assert!(NDS_END <= crate::ioctl::NEURON_DATASTORE_SIZE as usize);

/// Byte offset of counter `counter` of NC `nc`, as `get_neuroncore_counter_value`
/// finds it; `None` where the driver warns and answers 0.
pub const fn nc_counter_offset(nc: usize, counter: usize) -> Option<usize> {
    if counter >= id::TOTAL_NC_COUNTER_COUNT || nc >= NDS_NC_MAX {
        return None;
    }
    if nc < NDS_MAX_NEURONCORE_COUNT {
        if counter < id::NC_COUNTER_COUNT {
            Some(NDS_NEURONCORE_COUNTERS_START + (nc * id::NC_COUNTER_COUNT + counter) * 8)
        } else {
            let ext = counter - id::NC_COUNTER_COUNT;
            Some(NDS_EXT_NEURONCORE_COUNTERS_START + (nc * id::EXT_NC_COUNTER_COUNT + ext) * 8)
        }
    } else {
        let n = nc - NDS_MAX_NEURONCORE_COUNT;
        Some(NDS_EXT_NEURONCORE_NC_DATA_START + (n * NDS_EXT_NEURONCORE_NC_DATA_COUNT + counter) * 8)
    }
}

/// The header's `version` this binding writes: no public source gives a
/// value, G-NDS-HEADER.
pub const NDS_VERSION: i32 = 1;

const _: () = assert!(NDS_VERSION_OFFSET + 4 == NDS_HEADER_START + NDS_HEADER_SIZE);

#[cfg(test)]
mod tests {
    use super::*;

    /// Every offset this crate writes, against the header's macros computed by hand
    /// (share/neuron_driver_shared.h at fca19f7).
    #[test]
    fn the_offsets_are_the_driver_headers() {
        assert_eq!(NDS_HEADER_SIZE, 8);
        assert_eq!(NDS_ND_COUNTERS_START, 8);
        assert_eq!(NDS_NEURONCORE_COUNTERS_START, 256);
        assert_eq!(NDS_EXT_SECTION_SIZE_OLD, 11_296);
        assert_eq!(NDS_EXT_NEURONCORE_COUNTERS_START, 55_936); // NDS_ALIGN(44588 + 11296 = 55884)
        assert_eq!(NDS_EXT_NEURONCORE_NC_DATA_START, 57_984); // 55936 + 64*4*8, already aligned
        assert_eq!(NDS_END, 67_200);
        assert_eq!((nds_align(0), nds_align(1), nds_align(64), nds_align(65)), (0, 64, 64, 128));
        // The original section: NC n's id c at 256 + (31 n + c) * 8.
        assert_eq!(nc_counter_offset(0, id::TIME_IN_USE), Some(256));
        assert_eq!(nc_counter_offset(0, id::INFER_COMPLETED), Some(264));
        assert_eq!(nc_counter_offset(0, id::INFER_TIMED_OUT), Some(288));
        assert_eq!(nc_counter_offset(0, id::LATENCY_DEVICE), Some(360));
        assert_eq!(nc_counter_offset(0, id::OOB), Some(496));
        assert_eq!(nc_counter_offset(1, id::INFER_COMPLETED), Some(256 + 32 * 8));
        assert_eq!(nc_counter_offset(3, id::OOB), Some(256 + (3 * 31 + 30) * 8));
        assert_eq!(nc_counter_offset(3, id::OOB).map(|o| o + 8), Some(1248), "the section ends at 1248");
        // The extension of NCs 0..=3: id 31 + e at 55936 + (64 n + e) * 8.
        assert_eq!(nc_counter_offset(0, id::HW_ERR_COLLECTIVES), Some(55_936));
        assert_eq!(nc_counter_offset(0, id::ERR_SW_NQ_OVERFLOW), Some(55_936 + 4 * 8));
        assert_eq!(nc_counter_offset(1, id::HW_ERR_COLLECTIVES), Some(55_936 + 64 * 8));
        assert_eq!(nc_counter_offset(3, 94), Some(55_936 + (3 * 64 + 63) * 8));
        // NCs 4..=15: all 95 ids at 57984 + (96 (n - 4) + c) * 8.
        assert_eq!(nc_counter_offset(4, 0), Some(57_984));
        assert_eq!(nc_counter_offset(4, id::HW_ERR_COLLECTIVES), Some(57_984 + 31 * 8));
        assert_eq!(nc_counter_offset(5, 0), Some(57_984 + 96 * 8));
        assert_eq!(nc_counter_offset(15, 94), Some(57_984 + (11 * 96 + 94) * 8));
        // More vectors, as an independent reading of the header computed them.
        assert_eq!(nc_counter_offset(2, id::INFER_FAILED_TO_QUEUE), Some(800));
        assert_eq!(nc_counter_offset(4, id::INFER_TIMED_OUT), Some(58_016));
        assert_eq!(nc_counter_offset(4, id::ERR_SW_NQ_OVERFLOW), Some(58_264));
        assert_eq!(nc_counter_offset(5, id::LATENCY_DEVICE), Some(58_856));
        assert_eq!(nc_counter_offset(7, id::INFER_TIMED_OUT), Some(60_320));
        assert_eq!(nc_counter_offset(7, id::ERR_SW_NQ_OVERFLOW), Some(60_568));
        assert_eq!(nc_counter_offset(15, 94), Some(67_184));
        assert_eq!(nc_counter_offset(16, 0), None);
        assert_eq!(nc_counter_offset(0, 95), None);
    }

    /// `nds_header_t` as the header lays it out: the signature's four bytes at
    /// 0, the `int` version at 4, the device counters right after.
    #[test]
    fn the_header_words_are_where_nds_header_t_puts_them() {
        assert_eq!((NDS_HEADER_START, NDS_SIGNATURE_OFFSET, NDS_VERSION_OFFSET), (0, 0, 4));
        assert_eq!(NDS_SIGNATURE, [b'n', b'd', b's', 0]);
        assert_eq!(NDS_VERSION_OFFSET + core::mem::size_of::<i32>(), NDS_HEADER_SIZE);
        assert_eq!(NDS_ND_COUNTERS_START, NDS_HEADER_SIZE);
        assert_eq!(NDS_VERSION, 1);
    }

    /// The word of NC `nc`'s counter `c` as share/neuron_driver_shared.h's
    /// macros compute it, from the header's own numbers rather than this
    /// module's constants: the enums' last members (`NDS_ND_COUNTER_DEVICE_CLUSTER_ID`
    /// 12, `NDS_NC_COUNTER_OOB` 30, `NDS_EXT_NC_COUNTER_LAST` 41) and
    /// reserved counts, `NDS_ALIGN`'s `v + (-v & 63)`, and
    /// `NDS_NEURONCORE_COUNTERS`, `NDS_EXT_NEURONCORE_COUNTERS`,
    /// `NDS_EXT_NEURONCORE_NC_DATA` (indexed in `uint64_t`s) as
    /// `get_neuroncore_counter_value` picks between them.
    fn header_macro_offset(nc: usize, c: usize) -> usize {
        let u64_size = 8;
        let align = |v: usize| v + (v.wrapping_neg() & 63);
        let nd_counter_count = 12 + 18 + 1;
        let nc_counter_count = 30 + 1;
        let ext_nc_counter_count = 41 - nc_counter_count + 54;
        let total_nc_counter_count = nc_counter_count + ext_nc_counter_count;
        let (header_start, header_size) = (0, 8);
        let nd_start = header_start + header_size;
        let nc_start = nd_start + nd_counter_count * u64_size;
        let ext_old_size = 65 * 4 * u64_size + 96 * 12 * u64_size;
        let ext_start = align(44588 + ext_old_size);
        let data_start = align(ext_start + ext_nc_counter_count * 4 * u64_size);
        if nc < 4 && c < nc_counter_count {
            nc_start + (nc * nc_counter_count + c) * u64_size
        } else if nc < 4 {
            ext_start + (nc * ext_nc_counter_count + (c - nc_counter_count)) * u64_size
        } else {
            data_start + ((nc - 4) * (total_nc_counter_count + 1) + c) * u64_size
        }
    }

    /// Every (NC, id) a datastore has, not samples: [`nc_counter_offset`] is
    /// the header's macros.
    #[test]
    fn every_counter_offset_is_the_header_macros() {
        for nc in 0..NDS_NC_MAX {
            for c in 0..id::TOTAL_NC_COUNTER_COUNT {
                assert_eq!(nc_counter_offset(nc, c), Some(header_macro_offset(nc, c)), "nc {nc} id {c}");
            }
        }
        assert_eq!(header_macro_offset(0, 0), 256, "the formula itself, against one hand-computed word");
        assert_eq!(header_macro_offset(15, 94), 67_184);
    }

    /// No two (NC, id) pairs share a word, every word is inside a section and
    /// inside the datastore.
    #[test]
    fn every_counter_has_its_own_word_inside_its_section() {
        let mut offsets = [0usize; NDS_NC_MAX * id::TOTAL_NC_COUNTER_COUNT];
        let mut k = 0;
        for nc in 0..NDS_NC_MAX {
            for c in 0..id::TOTAL_NC_COUNTER_COUNT {
                let o = nc_counter_offset(nc, c).unwrap();
                assert_eq!(o % 8, 0);
                let in_orig = (NDS_NEURONCORE_COUNTERS_START..1248).contains(&o);
                let in_ext = (NDS_EXT_NEURONCORE_COUNTERS_START..NDS_EXT_NEURONCORE_NC_DATA_START).contains(&o);
                let in_extra = (NDS_EXT_NEURONCORE_NC_DATA_START..NDS_END).contains(&o);
                assert!(in_orig || in_ext || in_extra, "nc {nc} id {c} at {o}");
                assert!(o + 8 <= crate::ioctl::NEURON_DATASTORE_SIZE as usize);
                offsets[k] = o;
                k += 1;
            }
        }
        offsets.sort_unstable();
        assert!(offsets.windows(2).all(|w| w[0] < w[1]), "two counters share a word");
    }
}
