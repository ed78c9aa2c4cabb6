//! `include/rnicdv.h`, the C header of the direct verbs, is what cbindgen makes of
//! `src/dv.rs`: the check that the checked-in header is fresh. `RNICDV_H_UPDATE=1 cargo
//! test -p rnic-verbs --test header_fresh` rewrites it.
use std::path::Path;

/// The header's opening comment: what the entry points do.
const PREAMBLE: &str = "\
/* Direct verbs of the RNIC's libibverbs: what <infiniband/verbs.h> cannot say.
 * Generated from verbs/src/dv.rs by cbindgen (verbs/tests/header_fresh.rs): do not edit.
 *
 * RFC 7306 masked atomics. ibv_post_send's atomics are their whole-word special case
 * (a plain add; a compare and swap of all 64 bits); these post the general ones on an RC
 * QP in RTS, as one more request of its send queue.
 *
 *   masked FetchAdd: adds compare_add to the remote word, the carry dropped at each bit
 *                    set in compare_add_mask (RFC 7306's Add Mask: a set bit ends a field).
 *   masked CmpSwap:  if (original ^ compare_add) & compare_add_mask is 0, the word becomes
 *                    (original & ~swap_mask) | (swap & swap_mask).
 *
 * Both write the original word to the 8 octets at sge (host order) and complete with
 * IBV_WC_FETCH_ADD and IBV_WC_COMP_SWAP.
 *
 * Link with the RNIC's libibverbs (-libverbs from its directory); see docs/VERBS.md. */";

fn generated() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut config = cbindgen::Config {
        language: cbindgen::Language::C,
        style: cbindgen::Style::Tag,
        header: Some(PREAMBLE.into()),
        include_guard: Some("RNICDV_H".into()),
        cpp_compat: true,
        no_includes: true,
        sys_includes: vec!["stdint.h".into(), "infiniband/verbs.h".into()],
        documentation_style: cbindgen::DocumentationStyle::Doxy,
        ..cbindgen::Config::default()
    };
    // The Rust name of the request, and the rdma-core structures it names (from the
    // bindgen types in `sys`, which cbindgen does not read).
    for (rust, c) in
        [("MaskedAtomicWr", "rnicdv_masked_atomic_wr"), ("ibv_sge", "struct ibv_sge"), ("ibv_qp", "struct ibv_qp")]
    {
        config.export.rename.insert(rust.into(), c.into());
    }
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/dv.rs"))
        .generate()
        .expect("cbindgen reads src/dv.rs");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("UTF-8")
}

#[test]
fn rnicdv_h_is_what_cbindgen_makes_of_dv_rs() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/rnicdv.h");
    let fresh = generated();
    if std::env::var_os("RNICDV_H_UPDATE").is_some() {
        std::fs::write(&path, &fresh).expect("write include/rnicdv.h");
    }
    let checked_in = std::fs::read_to_string(&path).expect("include/rnicdv.h");
    assert!(
        checked_in == fresh,
        "include/rnicdv.h is stale: RNICDV_H_UPDATE=1 cargo test -p rnic-verbs --test header_fresh\n{fresh}"
    );
}
