//! The fuzz targets' properties (`tests/fuzz_checks`) on the committed corpus seeds
//! (`fuzz/corpus/TARGET/`) and on every input a campaign found (`fuzz/regressions/TARGET/`),
//! so that stable CI runs what the nightly campaign checks.

mod fuzz_checks;

use std::path::PathBuf;

fn inputs(dir: &str, target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(dir)
        .join(target);
    let Ok(rd) = std::fs::read_dir(&d) else {
        return vec![];
    };
    let mut v: Vec<(PathBuf, Vec<u8>)> = rd
        .map(|e| e.expect("readable corpus folder").path())
        .filter(|p| p.is_file())
        .map(|p| {
            let b = std::fs::read(&p).expect("readable corpus file");
            (p, b)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_target_holds_on_its_seeds_and_regressions() {
    let mut seeds = 0;
    for (target, check) in fuzz_checks::TARGETS {
        let corpus = inputs("corpus", target);
        assert!(!corpus.is_empty(), "fuzz/corpus/{target}/ has no seeds");
        for (path, bytes) in corpus.iter().chain(&inputs("regressions", target)) {
            let r = std::panic::catch_unwind(|| check(bytes));
            assert!(r.is_ok(), "{target}: {} fails the property", path.display());
            seeds += 1;
        }
    }
    assert!(seeds >= 5);
}

/// The seeds are what the targets expect to accept: the valid ones parse, so the campaign
/// starts from inputs that reach the round trips.
#[test]
fn the_seeds_reach_the_round_trips() {
    use lowprec::io::{npy, safetensors as st};
    let ok = |target: &str, f: &dyn Fn(&[u8]) -> bool| {
        let n = inputs("corpus", target)
            .iter()
            .filter(|(_, b)| f(b))
            .count();
        assert!(n >= 1, "{target}: no seed is accepted");
    };
    ok("npy", &|b| npy::from_bytes(b).is_ok());
    ok("safetensors", &|b| st::from_bytes(b.to_vec()).is_ok());
    ok("quantized", &|b| {
        st::from_bytes(b.to_vec()).is_ok_and(|f| lowprec::io::quantized::read(&f).is_ok())
    });
    ok("format_name", &|b| {
        std::str::from_utf8(b).is_ok_and(|s| lowprec::FloatFormat::parse(s).is_ok())
    });
    ok("scheme_name", &|b| {
        std::str::from_utf8(b).is_ok_and(|s| lowprec::scheme::Scheme::parse(s).is_ok())
    });
    ok("decimal", &|b| {
        std::str::from_utf8(b).is_ok_and(|s| lowprec::exact::Exact::parse(s).is_ok())
    });
}
