//! `lowprec report --plot` and `--summary`'s layer groups on the built binary: the SVG is
//! well formed, holds one line per scheme in each panel and names the schemes, replaces an
//! existing file atomically and is refused up front where it cannot be written; the group
//! totals add up to the per-scheme totals, merge exactly (a group of one tensor is its row,
//! a group of all is the totals, the SQNR is that of the members' summed squares), and
//! `--group` comes before the default groups.

mod common;

use common::{fails, ok, run};
use lowprec::io::safetensors::{self as st, Dtype, TensorOut};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A small Llama-like checkpoint: `(name, shape)`, in file order.
const TENSORS: [(&str, [usize; 2]); 9] = [
    ("model.embed_tokens.weight", [64, 128]),
    ("model.layers.0.self_attn.q_proj.weight", [128, 128]),
    ("model.layers.0.self_attn.k_proj.weight", [64, 128]),
    ("model.layers.0.mlp.up_proj.weight", [256, 128]),
    ("model.layers.0.input_layernorm.weight", [1, 128]),
    ("model.layers.1.self_attn.q_proj.weight", [128, 128]),
    ("model.layers.1.mlp.down_proj.weight", [128, 256]),
    ("model.norm.weight", [1, 128]),
    ("lm_head.weight", [64, 128]),
];

/// The default group of each of [`TENSORS`].
const GROUPS: [&str; 9] = [
    "embeddings",
    "attention",
    "attention",
    "mlp",
    "norms",
    "attention",
    "mlp",
    "norms",
    "embeddings",
];

/// Write [`TENSORS`] (normal values of different scales) as float32 to `dir/model.safetensors`.
fn model(dir: &Path) -> PathBuf {
    let data: Vec<Vec<u8>> = TENSORS
        .iter()
        .enumerate()
        .map(|(i, (_, sh))| {
            let scale = 0.02 * (1 + i % 3) as f64;
            lowprec::report::normal_samples(sh[0] * sh[1], 40 + i as u64)
                .iter()
                .flat_map(|v| ((v * scale) as f32).to_le_bytes())
                .collect()
        })
        .collect();
    let out: Vec<TensorOut> = TENSORS
        .iter()
        .zip(&data)
        .map(|((n, sh), b)| TensorOut::new(n, Dtype::F32, sh, b))
        .collect();
    let p = dir.join("model.safetensors");
    st::write(&p, &out, &BTreeMap::new()).unwrap();
    p
}

/// The polylines of an SVG document: `(stroke colour, number of points)`.
fn polylines(svg: &str) -> Vec<(String, usize)> {
    svg.split("<polyline")
        .skip(1)
        .map(|p| {
            let attr = |k: &str| -> String {
                let from = p.find(&format!("{k}=\"")).expect(k) + k.len() + 2;
                p[from..from + p[from..].find('"').unwrap()].to_string()
            };
            (attr("stroke"), attr("points").split_whitespace().count())
        })
        .collect()
}

/// The texts of an SVG document, trimmed.
fn texts(svg: &str) -> Vec<&str> {
    svg.split("<text")
        .skip(1)
        .map(|t| {
            let body = &t[t.find('>').unwrap() + 1..];
            body[..body.find("</text>").unwrap()].trim()
        })
        .collect()
}

/// Whether every element of `svg` is closed in order (a well-formed XML tree; text and
/// attributes are not checked further).
fn well_formed(svg: &str) -> bool {
    let mut stack: Vec<&str> = vec![];
    let mut rest = svg;
    while let Some(i) = rest.find('<') {
        let j = i + rest[i..].find('>').expect("a tag ends");
        let tag = &rest[i + 1..j];
        rest = &rest[j + 1..];
        if tag.starts_with('?') || tag.starts_with('!') || tag.ends_with('/') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            if stack.pop() != Some(name.trim()) {
                return false;
            }
        } else {
            stack.push(tag.split_whitespace().next().unwrap_or(""));
        }
    }
    stack.is_empty() && rest.trim().is_empty()
}

/// The first colours of the chart's palette (one per scheme, in order).
const COLOURS: [&str; 3] = ["#1F77B4", "#D62728", "#2CA02C"];

#[test]
fn plot_draws_one_line_per_scheme_in_each_panel_beside_the_json() {
    let d = tempfile::tempdir().unwrap();
    let m = model(d.path());
    let svg_path = d.path().join("report.svg");
    let schemes = ["nvfp4", "int8", "fp8-e4m3"];
    let o = run(&[
        "report",
        s(&m),
        "-s",
        schemes[0],
        "-s",
        schemes[1],
        "-s",
        schemes[2],
        "--json",
        "--plot",
        s(&svg_path),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // stdout is still exactly the JSON; the note goes to stderr
    let j: Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert_eq!(j["tensors"].as_array().unwrap().len(), 9 * 3);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).trim(),
        format!("plot written to {}", svg_path.display())
    );
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(well_formed(&svg), "not well formed");
    let texts = texts(&svg);
    for name in schemes {
        // the legend of each panel names it
        assert_eq!(texts.iter().filter(|t| **t == name).count(), 2, "{name}");
    }
    assert!(texts
        .iter()
        .any(|t| t.starts_with("(a) SQNR per tensor (9 tensors")));
    assert!(texts
        .iter()
        .any(|t| t.starts_with("(b) |q − x| over all tensors")));
    // one line per scheme and panel (legend samples have 2 points, the data lines more):
    // (a) 9 tensors, (b) the histogram's edges; every coloured line is a scheme's
    let lines = polylines(&svg);
    for c in COLOURS {
        let long: Vec<usize> = lines
            .iter()
            .filter(|(k, n)| k == c && *n > 2)
            .map(|l| l.1)
            .collect();
        assert_eq!(long.len(), 2, "{c}: {long:?}");
        assert_eq!(long[0], 9, "{c}: panel (a) has a point per tensor");
        assert!(long[1] > 9, "{c}: panel (b) has a point per bin edge");
        assert_eq!(lines.iter().filter(|(k, n)| k == c && *n == 2).count(), 2);
        // panel (a)'s markers: one per tensor, and one in its legend
        assert_eq!(svg.matches(&format!("fill=\"{c}\"")).count(), 9 + 1, "{c}");
    }
    let coloured = lines
        .iter()
        .filter(|(k, n)| *n > 2 && k != "#000000" && !COLOURS.contains(&k.as_str()))
        .count();
    assert_eq!(coloured, 0, "lines of no scheme");
}

#[test]
fn plot_replaces_a_file_atomically_and_bad_targets_are_refused_first() {
    use std::os::unix::fs::MetadataExt;
    let d = tempfile::tempdir().unwrap();
    let m = model(d.path());
    let p = d.path().join("old.svg");
    std::fs::write(&p, "old").unwrap();
    let before = std::fs::metadata(&p).unwrap().ino();
    let table = ok(&["report", s(&m), "-s", "int8", "--summary", "--plot", s(&p)]);
    assert!(table.contains("By layer group:"), "{table}");
    let svg = std::fs::read_to_string(&p).unwrap();
    assert!(svg.starts_with("<svg") && well_formed(&svg));
    // a new file renamed over the old one, nothing left beside it
    assert_ne!(std::fs::metadata(&p).unwrap().ino(), before);
    let mut names: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["model.safetensors", "old.svg"]);
    // a missing folder, a folder, the input itself: exit 2, one line, nothing written
    let missing = d.path().join("no/such/folder/r.svg");
    fails(
        &["report", s(&m), "-s", "int8", "--plot", s(&missing)],
        &[&missing],
        "does not exist",
    );
    fails(
        &["report", "-s", "int8", "--plot", s(d.path())],
        &[],
        "--plot",
    );
    let before = std::fs::read(&m).unwrap();
    fails(
        &["report", s(&m), "-s", "int8", "--plot", s(&m)],
        &[],
        "is the input file",
    );
    assert_eq!(std::fs::read(&m).unwrap(), before);
}

/// `report … --json` parsed.
fn json(args: &[&str]) -> Value {
    serde_json::from_str(&ok(args)).expect("JSON")
}

/// A record's number field.
fn f(r: &Value, k: &str) -> f64 {
    r[k].as_f64().unwrap_or(f64::NAN)
}

#[test]
fn group_totals_add_up_and_merge_exactly() {
    let d = tempfile::tempdir().unwrap();
    let m = model(d.path());
    let base = ["report", s(&m), "-s", "nvfp4", "-s", "int8", "--json"];
    let per_tensor = json(&base);
    let rows = per_tensor["tensors"].as_array().unwrap();
    assert!(
        per_tensor.get("groups").is_none(),
        "groups only with --summary"
    );
    let summary = json(&[&base[..], &["--summary"]].concat());
    let totals = summary["totals"].as_array().unwrap();
    let groups = summary["groups"].as_array().unwrap();
    let order: Vec<(&str, &str)> = groups
        .iter()
        .map(|g| (g["group"].as_str().unwrap(), g["scheme"].as_str().unwrap()))
        .collect();
    let want: Vec<(&str, &str)> = ["embeddings", "attention", "mlp", "norms"]
        .iter()
        .flat_map(|g| [(*g, "nvfp4"), (*g, "int8")])
        .collect();
    assert_eq!(order, want, "groups in order, `other` (empty) left out");
    for t in totals {
        let scheme = t["scheme"].as_str().unwrap();
        let mine: Vec<&Value> = groups.iter().filter(|g| g["scheme"] == scheme).collect();
        let n: u64 = mine.iter().map(|g| g["elements"].as_u64().unwrap()).sum();
        assert_eq!(n, t["elements"].as_u64().unwrap(), "{scheme}");
        let k: u64 = mine.iter().map(|g| g["tensors"].as_u64().unwrap()).sum();
        assert_eq!(k, 9);
        for g in mine {
            let name = g["group"].as_str().unwrap();
            assert_eq!(g["tensor"], format!("(group:{name})"));
            // the members' rows: elements, and the SQNR of their summed squares
            // (Σ (q−x)² = RMSE² · n, Σ x² = that / NMSE)
            let members: Vec<&Value> = rows
                .iter()
                .filter(|r| r["scheme"] == scheme)
                .zip(GROUPS)
                .filter(|(_, gr)| *gr == name)
                .map(|(r, _)| r)
                .collect();
            assert_eq!(g["tensors"].as_u64().unwrap(), members.len() as u64);
            let n: u64 = members
                .iter()
                .map(|r| r["elements"].as_u64().unwrap())
                .sum();
            assert_eq!(g["elements"].as_u64().unwrap(), n, "{name} {scheme}");
            let sse: f64 = members
                .iter()
                .map(|r| f(r, "rmse").powi(2) * f(r, "elements"))
                .sum();
            let energy: f64 = members
                .iter()
                .map(|r| f(r, "rmse").powi(2) * f(r, "elements") / f(r, "nmse"))
                .sum();
            let sqnr = 10.0 * (energy / sse).log10();
            assert!(
                (f(g, "sqnr_db") - sqnr).abs() < 1e-9 * sqnr.abs(),
                "{name} {scheme}: {} vs {sqnr}",
                f(g, "sqnr_db")
            );
            let max = members
                .iter()
                .map(|r| f(r, "max_abs_error"))
                .fold(0.0, f64::max);
            assert_eq!(f(g, "max_abs_error"), max);
        }
    }
    // a group of every tensor is the totals, field for field; a group of one its row
    let all = json(&[&base[..], &["--summary", "--group", "all=*"]].concat());
    let g = all["groups"].as_array().unwrap();
    assert_eq!(g.len(), 2);
    for (g, t) in g.iter().zip(totals) {
        let mut g = g.as_object().unwrap().clone();
        assert_eq!(g.remove("group"), Some("all".into()));
        assert_eq!(g.remove("tensors"), Some(9.into()));
        g.insert("tensor".into(), "(all)".into());
        assert_eq!(&Value::Object(g), t);
    }
    let one = json(&[&base[..], &["--summary", "--group", "up=*.up_proj.*"]].concat());
    let g = &one["groups"][1];
    assert_eq!(
        (g["group"].as_str(), g["scheme"].as_str()),
        (Some("up"), Some("int8"))
    );
    let r = &rows[3 * 2 + 1];
    assert_eq!(r["tensor"], "model.layers.0.mlp.up_proj.weight");
    for k in [
        "elements",
        "rel_error",
        "sqnr_db",
        "cosine",
        "p99_abs_error",
        "bits_per_element",
    ] {
        assert_eq!(g[k], r[k], "{k}");
    }
}

#[test]
fn user_groups_come_first_and_show_in_every_output() {
    let d = tempfile::tempdir().unwrap();
    let m = model(d.path());
    let args = [
        "report",
        s(&m),
        "-s",
        "int8",
        "--summary",
        "--group",
        "layer0=model.layers.0.*",
        "--group",
        "q=*q_proj*,*k_proj*",
    ];
    let j = json(&[&args[..], &["--json"]].concat());
    let got: Vec<(String, u64)> = j["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["group"].as_str().unwrap().into(),
                g["tensors"].as_u64().unwrap(),
            )
        })
        .collect();
    // layer 0 takes its q_proj and k_proj before `q`; no tensor is left for `attention`
    let want = [
        ("layer0", 4),
        ("q", 1),
        ("embeddings", 2),
        ("mlp", 1),
        ("norms", 1),
    ];
    assert_eq!(got, want.map(|(g, n)| (g.to_string(), n)));
    let text = ok(&args);
    let table = text
        .split("By layer group:\n")
        .nth(1)
        .expect("a group table");
    let first: Vec<&str> = table
        .lines()
        .map(|l| l.split_whitespace().next().unwrap_or(""))
        .collect();
    assert_eq!(
        first,
        ["group", "layer0", "q", "embeddings", "mlp", "norms"]
    );
    assert!(table.lines().nth(1).unwrap().contains(" 4 "), "{table}");
    let csv = ok(&[&args[..], &["--csv"]].concat());
    let tensors: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(
        tensors,
        [
            "(all)",
            "(group:layer0)",
            "(group:q)",
            "(group:embeddings)",
            "(group:mlp)",
            "(group:norms)"
        ]
    );
    // the built-in tensors have no layer names: one line says so
    let b = ok(&["report", "-s", "int8", "--summary"]);
    assert!(
        b.ends_with(
            "\nLayer groups: every tensor is in `other` (--group NAME=GLOB defines groups).\n"
        ),
        "{b}"
    );
    // a spec without `=` or without patterns: refused before any tensor is read
    fails(
        &["report", "-s", "int8", "--group", "nothing"],
        &[],
        "--group",
    );
    fails(
        &["report", "-s", "int8", "--group", "x="],
        &[],
        "no pattern",
    );
}

#[test]
fn a_row_without_a_figure_leaves_a_gap_in_its_line() {
    let d = tempfile::tempdir().unwrap();
    // the middle tensor's rows of 100 are no whole Q4_0 blocks of 32: an error row
    let shapes: [[usize; 2]; 5] = [[16, 64], [16, 64], [4, 100], [16, 64], [16, 64]];
    let names = ["a", "b", "odd", "c", "e"];
    let data: Vec<Vec<u8>> = shapes
        .iter()
        .enumerate()
        .map(|(i, sh)| {
            lowprec::report::normal_samples(sh[0] * sh[1], i as u64)
                .iter()
                .flat_map(|v| (*v as f32).to_le_bytes())
                .collect()
        })
        .collect();
    let out: Vec<TensorOut> = names
        .iter()
        .zip(&shapes)
        .zip(&data)
        .map(|((n, sh), b)| TensorOut::new(n, Dtype::F32, sh, b))
        .collect();
    let m = d.path().join("m.safetensors");
    st::write(&m, &out, &BTreeMap::new()).unwrap();
    let p = d.path().join("gap.svg");
    let table = ok(&[
        "report",
        s(&m),
        "-s",
        "gguf:Q4_0",
        "-s",
        "int8",
        "--plot",
        s(&p),
    ]);
    assert!(table.contains("n/a: rows of 100 elements"), "{table}");
    let svg = std::fs::read_to_string(&p).unwrap();
    let lines = polylines(&svg);
    let of = |c: &str| -> Vec<usize> { lines.iter().filter(|l| l.0 == c).map(|l| l.1).collect() };
    // Q4_0: the runs a–b and c–e, two legend samples, panel (b); int8: one run of 5
    let q4 = of(COLOURS[0]);
    assert_eq!(q4.len(), 5, "{q4:?}");
    assert_eq!(q4.iter().filter(|n| **n == 2).count(), 4, "{q4:?}");
    let int8 = of(COLOURS[1]);
    assert_eq!((int8.len(), int8[0]), (4, 5), "{int8:?}");
    assert_eq!(
        svg.matches(&format!("fill=\"{}\"", COLOURS[0])).count(),
        4 + 1
    );
}
