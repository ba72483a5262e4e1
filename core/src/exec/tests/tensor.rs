//! CUSTOM records: tensor completions, diagnostics, the sub-id and the cayman tag
//! fixup.

use super::*;

#[test]
fn custom_records_tensor_completion_and_diagnostics() {
    let mut r = Rig::new(1, 5);
    r.dev.custom(0, 1, 7, 101, 2);
    r.dev.custom(0, 1, 7, 100, 3);
    r.dev.custom(0, 1, 7, 101, 4);
    r.dev.custom(0, 1, 7, 555, 5); // no such output
    r.dev.custom(0, 1, 3, 9, 6); // a diagnostic
    r.dev.run_all(1, 10, 20);
    r.enter_wait_core();
    let s = r.finish();
    assert_eq!(s, Step::Done(NrtStatus::Success));
    assert_eq!(&r.dev.wakes[..], &[(1, 1), (0, 1), (1, 2)], "waiters woken in order");
    assert_eq!(r.dev.tensors.count(1), 2);
    assert_eq!(r.dev.count("tensor_completed"), 3);
    assert_eq!(r.dev.count("unknown_tensor"), 1);
    assert_eq!(r.dev.count("custom_notification"), 1);
}

#[test]
fn invalid_custom_sub_id_fails() {
    let mut r = Rig::new(1, 5);
    r.dev.custom(0, 0, 11, 0, 1);
    r.enter_wait_core();
    assert_eq!(r.step(), Step::failed(NrtStatus::Failure));
    assert_eq!(r.dev.count("bad_custom_sub_id"), 1);
}

#[test]
fn cayman_custom_fixup_rewrites_the_tag_on_engine_index_2_only() {
    let tag_of = |arch, eng| {
        let mut r = Rig::with_arch(arch, 1, 5);
        r.dev.custom(0, eng, 3, 0, 1);
        r.enter_wait_core();
        r.step();
        let tag = match r.dev.events_of("custom_notification").next() {
            Some(Event::Exec(ExecEvent::CustomNotification { tag, .. })) => *tag,
            other => panic!("{other:?}"),
        };
        tag
    };
    assert_eq!(tag_of(Arch::Cayman, 2), 0xE);
    assert_eq!(tag_of(Arch::Mariana, 2), 0xE);
    assert_eq!(tag_of(Arch::Sunda, 2), 6, "sunda trusts the field");
    assert_eq!(tag_of(Arch::Cayman, 3), 7, "DVE's index 3 is left alone");
}

#[test]
fn a_custom_sub_id_is_the_u16_at_4_so_byte_5_counts() {
    // data[4] = 7 (tensor completion) but data[5] = 1: the u16 @4 is 0x107, outside
    // the 11-entry table, so the record is refused, not taken as a tensor
    // completion, G-SUBID-WIDTH.
    let mut r = Rig::new(1, 5);
    let mut e = crate::nq::RawEntry::new(Subtype::CUSTOM, 4, 0, 0x0107, 1);
    e.set_isa_line_lo(100);
    let bytes = e.to_array();
    assert_eq!((bytes[4], bytes[5]), (7, 1));
    r.dev.push_raw(0, 4, bytes);
    r.enter_wait_core();
    assert_eq!(r.step(), Step::failed(NrtStatus::Failure));
    assert!(r.dev.events.contains(&Event::Exec(ExecEvent::BadCustomSubId {
        core: 0,
        engine: Engine::Pe,
        sub_id: 0x107
    })));
    assert_eq!(r.dev.count("tensor_completed"), 0);
    assert!(r.dev.wakes.is_empty());
}
