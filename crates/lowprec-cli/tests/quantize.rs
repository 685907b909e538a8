//! `lowprec quantize` and `lowprec dequantize` on the built binary: every row of mx.csv and
//! nvfp4.csv through `quantize` (values, element codes, scale codes, dtypes and shapes), packed
//! codes against `block::pack`, the `.safetensors` round trip (untouched tensors byte for
//! byte, dtypes and shapes restored, values equal to the `.npy` path, companions and
//! metadata), and bad input (exit code 2, one line on stderr, no output file, no temporary
//! file left).

mod common;

use common::{fails, hex, run, same, vectors, write_npy};
use lowprec::block::pack::{pack, packed_len, unpack};
use lowprec::io::npy::{self, Array, Data};
use lowprec::io::safetensors::{self as st, Dtype, TensorOut};
use lowprec::{FloatFormat, RoundOptions};
use std::collections::BTreeMap;
use std::path::Path;

/// Run a command that must succeed; its stderr.
fn ok(args: &[&str]) -> String {
    let o = run(args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{args:?}: {err}");
    err
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn read_npy(path: &Path) -> Array {
    npy::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn u8s(a: Array) -> Vec<u8> {
    match a.data {
        Data::U8(v) => v,
        d => panic!("uint8 expected, got {}", d.dtype_name()),
    }
}

fn read_st(path: &Path) -> st::SafeTensors {
    st::from_bytes(std::fs::read(path).unwrap()).unwrap()
}

/// Deterministic normal(0, 1) samples (splitmix64, Box-Muller).
fn normal(n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed ^ 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    (0..n)
        .map(|_| {
            let u1 = ((next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            let u2 = (next() >> 11) as f64 / (1u64 << 53) as f64;
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        })
        .collect()
}

/// binary32 samples: normal(0, 1) times `scale`, every 37th multiplied by 9 (outliers).
fn weights(n: usize, seed: u64, scale: f64) -> Vec<f32> {
    normal(n, seed)
        .iter()
        .enumerate()
        .map(|(i, v)| (v * scale * if i % 37 == 5 { 9.0 } else { 1.0 }) as f32)
        .collect()
}

fn bits16(fmt: &FloatFormat, x: &[f32]) -> Vec<u16> {
    lowprec::encode_vec::<f32, u16>(fmt, x, &RoundOptions::default())
        .unwrap()
        .0
}

struct MxRow {
    input: f64,
    output: f64,
    scale_exponent: i32,
    code: u8,
}

#[test]
fn mx_csv_through_quantize() {
    let text = std::fs::read_to_string(vectors().join("mx.csv")).expect("vectors");
    // element type -> cases in file order -> the 32 rows of the block
    let mut by: BTreeMap<String, Vec<(String, Vec<MxRow>)>> = BTreeMap::new();
    for l in text.lines().skip(1) {
        let c: Vec<&str> = l.split(',').collect();
        let cases = by.entry(c[1].into()).or_default();
        if cases.last().is_none_or(|(id, _)| id != c[0]) {
            cases.push((c[0].into(), Vec::new()));
        }
        let rows = &mut cases.last_mut().unwrap().1;
        assert_eq!(c[2].parse::<usize>().unwrap(), rows.len(), "{l}");
        rows.push(MxRow {
            input: f64::from_bits(hex(c[3])),
            output: f64::from_bits(hex(c[4])),
            scale_exponent: c[5].parse().unwrap(),
            code: hex(c[6]) as u8,
        });
    }
    assert_eq!(by.len(), 6, "six element types");
    let dir = tempfile::tempdir().unwrap();
    let (input, out) = (dir.path().join("x.npy"), dir.path().join("v.npy"));
    let (scales, codes) = (dir.path().join("s.npy"), dir.path().join("c.npy"));
    let mut checked = 0;
    for (elem, cases) in &by {
        let n = cases.len();
        assert!(
            cases.iter().all(|c| c.1.len() == 32),
            "{elem}: blocks of 32"
        );
        let x64: Vec<f64> = cases
            .iter()
            .flat_map(|c| c.1.iter().map(|r| r.input))
            .collect();
        let x32: Vec<f32> = x64.iter().map(|&v| v as f32).collect();
        assert!(x32.iter().zip(&x64).all(|(a, b)| *a as f64 == *b));
        let scheme = format!("mx:{elem}");
        for data in [Data::F32(x32), Data::F64(x64)] {
            let dtype = data.dtype_name();
            write_npy(&input, vec![n, 32], data);
            ok(&[
                "quantize",
                s(&input),
                "--scheme",
                &scheme,
                "-o",
                s(&out),
                "--scales",
                s(&scales),
                "--codes",
                s(&codes),
            ]);
            let v = read_npy(&out);
            assert_eq!(v.shape, [n, 32], "{elem} {dtype}");
            let vals: Vec<f64> = match (dtype, v.data) {
                ("float32", Data::F32(v)) => v.into_iter().map(f64::from).collect(),
                ("float64", Data::F64(v)) => v,
                (_, d) => panic!("{elem}: {dtype} input gave {} values", d.dtype_name()),
            };
            let c = read_npy(&codes);
            assert_eq!(c.shape, [n, 32], "{elem} {dtype} codes");
            let c = u8s(c);
            let sc = read_npy(&scales);
            assert_eq!(sc.shape, [n, 1], "{elem} {dtype} scales");
            let sc = u8s(sc);
            for (k, (id, rows)) in cases.iter().enumerate() {
                for (i, r) in rows.iter().enumerate() {
                    let j = 32 * k + i;
                    assert!(
                        same(vals[j], r.output),
                        "{id}[{i}] {dtype}: x={:e} value {:e}, expected {:e}",
                        r.input,
                        vals[j],
                        r.output
                    );
                    assert_eq!(c[j], r.code, "{id}[{i}] {dtype}: element code");
                    checked += 1;
                }
                assert_eq!(
                    sc[k] as i32,
                    rows[0].scale_exponent + 127,
                    "{id} {dtype}: E8M0 scale code"
                );
            }
        }
    }
    assert_eq!(checked, 2 * 4992);
}

#[test]
fn nvfp4_csv_through_quantize() {
    let text = std::fs::read_to_string(vectors().join("nvfp4.csv")).expect("vectors");
    // case -> (input, output, element code, block scale code, tensor scale bits)
    type Row = (f64, f64, u8, u8, u64);
    let mut cases: Vec<(String, Vec<Row>)> = Vec::new();
    for l in text.lines().skip(1) {
        let c: Vec<&str> = l.split(',').collect();
        if cases.last().is_none_or(|(id, _)| id != c[0]) {
            cases.push((c[0].into(), Vec::new()));
        }
        let rows = &mut cases.last_mut().unwrap().1;
        assert_eq!(c[1].parse::<usize>().unwrap(), rows.len(), "{l}");
        rows.push((
            f64::from_bits(hex(c[2])),
            f64::from_bits(hex(c[3])),
            hex(c[4]) as u8,
            hex(c[5]) as u8,
            hex(c[6]),
        ));
    }
    assert_eq!(cases.len(), 18);
    let dir = tempfile::tempdir().unwrap();
    let (input, out) = (dir.path().join("x.npy"), dir.path().join("v.npy"));
    let (scales, codes) = (dir.path().join("s.npy"), dir.path().join("c.npy"));
    let (mut checked, mut tensor_scales) = (0, 0);
    for (id, rows) in &cases {
        let n = rows.len();
        assert_eq!(n % 16, 0, "{id}");
        write_npy(
            &input,
            vec![1, n],
            Data::F64(rows.iter().map(|r| r.0).collect()),
        );
        let err = ok(&[
            "quantize",
            s(&input),
            "--scheme",
            "nvfp4",
            "-o",
            s(&out),
            "--scales",
            s(&scales),
            "--codes",
            s(&codes),
        ]);
        let v = read_npy(&out);
        assert_eq!(v.shape, [1, n], "{id}");
        let Data::F64(v) = v.data else {
            panic!("{id}: float64 values")
        };
        let c = read_npy(&codes);
        assert_eq!(c.shape, [1, n], "{id} codes");
        let c = u8s(c);
        let sc = read_npy(&scales);
        assert_eq!(sc.shape, [1, n / 16], "{id} scales");
        let sc = u8s(sc);
        for (i, r) in rows.iter().enumerate() {
            assert!(
                same(v[i], r.1),
                "{id}[{i}]: x={:e} value {:e}, expected {:e}",
                r.0,
                v[i],
                r.1
            );
            assert_eq!(c[i], r.2, "{id}[{i}]: E2M1 code");
            assert_eq!(sc[i / 16], r.3, "{id}[{i}]: E4M3 block scale code");
            checked += 1;
        }
        // the tensor scale, where the summary line prints it
        if let Some(at) = err.find("tensor scale ") {
            let t = err[at + 13..]
                .split(|ch: char| ch.is_whitespace() || ch == ',')
                .next()
                .unwrap();
            let g: f32 = t.parse().unwrap_or_else(|_| panic!("{id}: `{t}` in {err}"));
            assert_eq!(
                (g as f64).to_bits(),
                rows[0].4,
                "{id}: tensor scale {g:e}, expected {:e}",
                f64::from_bits(rows[0].4)
            );
            tensor_scales += 1;
        }
    }
    assert_eq!(checked, 1072);
    eprintln!("{tensor_scales} of 18 tensor scales read from stderr and checked");
}

#[test]
fn packed_codes_unpack_to_the_codes() {
    let cases: [(&str, u32, &[usize]); 9] = [
        ("mx:fp4-e2m1", 4, &[2, 3, 64]),
        ("mx:fp6-e3m2", 6, &[2, 3, 64]),
        ("mx:fp6-e3m2:pad", 6, &[4, 42]), // 10 groups of 4 and a partial one per row
        ("int4:group=16", 4, &[2, 3, 64]),
        ("int4", 4, &[5, 7]), // odd rows: half of each row's last byte is padding
        ("int2", 2, &[2, 3, 64]),
        ("int2", 2, &[3, 7]),
        ("int2:asym:channel", 2, &[4, 10]),
        ("mx:fp8-e4m3", 8, &[2, 3, 64]),
    ];
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("x.npy");
    let (out, codes) = (dir.path().join("v.npy"), dir.path().join("c.npy"));
    let (packed, raw) = (dir.path().join("p.npy"), dir.path().join("p.bin"));
    for (k, (scheme, bits, shape)) in cases.into_iter().enumerate() {
        let n: usize = shape.iter().product();
        let row_len = *shape.last().unwrap();
        write_npy(
            &input,
            shape.to_vec(),
            Data::F32(weights(n, 100 + k as u64, 1.0)),
        );
        let args = ["quantize", s(&input), "--scheme", scheme, "-o", s(&out)];
        ok(&[&args[..], &["--codes", s(&codes), "--packed", s(&packed)]].concat());
        ok(&[&args[..], &["--packed", s(&raw)]].concat());
        let c = read_npy(&codes);
        assert_eq!(c.shape, shape, "{scheme}");
        let c = u8s(c);
        assert!(c.iter().all(|&v| u32::from(v) >> bits == 0), "{scheme}");
        let mut distinct = c.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let least = if bits == 2 { 2 } else { 5 };
        assert!(distinct.len() >= least, "{scheme}: codes {distinct:?}");
        let p = read_npy(&packed);
        let per = packed_len(row_len, bits);
        let mut want = shape.to_vec();
        *want.last_mut().unwrap() = per;
        assert_eq!(p.shape, want, "{scheme}: packed shape");
        let p = u8s(p);
        assert_eq!(p.len(), per * n / row_len, "{scheme}");
        for (r, (prow, crow)) in p.chunks(per).zip(c.chunks(row_len)).enumerate() {
            assert_eq!(
                unpack(prow, bits, row_len).unwrap(),
                crow,
                "{scheme}: row {r}"
            );
            // padding bits are zero: the bytes are exactly pack(codes)
            assert_eq!(pack(crow, bits).unwrap(), prow, "{scheme}: row {r}");
        }
        assert_eq!(
            std::fs::read(&raw).unwrap(),
            p,
            "{scheme}: raw --packed bytes"
        );
    }
}

/// How a scheme stores its scales in a quantized `.safetensors`.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// One E8M0/E4M3 byte per block of this many elements (MX, NVFP4).
    Block(usize),
    /// binary64 scales, one per group of this many elements.
    Group(usize),
    /// binary64 scales and zero points, one per row.
    ChannelAsym,
    /// One binary64 scale.
    Tensor,
}

#[test]
fn safetensors_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.safetensors");
    let (q, d) = (
        dir.path().join("q.safetensors"),
        dir.path().join("d.safetensors"),
    );
    let w = weights(8 * 64, 1, 0.05);
    let h = bits16(&FloatFormat::FP16, &weights(2 * 4 * 64, 2, 1.0));
    let b16 = bits16(&FloatFormat::BF16, &weights(4 * 64, 3, 0.02));
    let bias = weights(64, 4, 0.1);
    let ids: Vec<i32> = (0..15).map(|i| i * 1000 - 7000).collect();
    let le32 = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let le16 = |v: &[u16]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let (wb, hb, bb, biasb) = (le32(&w), le16(&h), le16(&b16), le32(&bias));
    let idsb: Vec<u8> = ids.iter().flat_map(|x| x.to_le_bytes()).collect();
    type Orig<'a> = (&'a str, Dtype, Vec<usize>, &'a [u8]);
    let orig: Vec<Orig> = vec![
        ("w", Dtype::F32, vec![8, 64], &wb),
        ("h", Dtype::F16, vec![2, 4, 64], &hb),
        ("b16", Dtype::BF16, vec![4, 64], &bb),
        ("bias", Dtype::F32, vec![64], &biasb),
        ("ids", Dtype::I32, vec![3, 5], &idsb),
    ];
    let outs: Vec<TensorOut> = orig
        .iter()
        .map(|(n, t, sh, b)| TensorOut::new(n, *t, sh, b))
        .collect();
    let meta = BTreeMap::from([("format".to_string(), "pt".to_string())]);
    st::write(&model, &outs, &meta).unwrap();
    // the same arrays as .npy, for the values of `quantize X.npy`
    let npys = [
        ("w", Data::F32(w.clone()), vec![8, 64]),
        ("h", Data::F16(h.clone()), vec![2, 4, 64]),
        ("b16", Data::BF16(b16.clone()), vec![4, 64]),
    ];
    for (name, data, shape) in &npys {
        write_npy(
            &dir.path().join(format!("{name}.npy")),
            shape.clone(),
            data.clone(),
        );
    }
    let schemes: [(&str, &str, u32, Kind, f64); 7] = [
        ("mxfp4", "mx:fp4-e2m1", 4, Kind::Block(32), 0.2),
        ("mx:fp6-e2m3", "mx:fp6-e2m3", 6, Kind::Block(32), 0.1),
        ("nvfp4", "nvfp4", 4, Kind::Block(16), 0.15),
        ("int4:group=32", "int4:group=32", 4, Kind::Group(32), 0.2),
        (
            "int8:asym:channel",
            "int8:asym:channel",
            8,
            Kind::ChannelAsym,
            0.01,
        ),
        ("tensor:fp8-e4m3", "tensor:fp8-e4m3", 8, Kind::Tensor, 0.05),
        ("fp8-e5m2", "tensor:fp8-e5m2", 8, Kind::Tensor, 0.1),
    ];
    for (arg, canonical, bits, kind, max_rel) in schemes {
        ok(&["quantize", s(&model), "--scheme", arg, "-o", s(&q)]);
        let qf = read_st(&q);
        assert_eq!(
            qf.metadata().get("lowprec.scheme").map(String::as_str),
            Some(canonical),
            "{arg}"
        );
        assert_eq!(qf.metadata().get("format").map(String::as_str), Some("pt"));
        let mut want_names: Vec<String> = vec!["bias".into(), "ids".into()];
        for (name, _, shape, _) in &orig[..3] {
            let t = qf.get(name).unwrap_or_else(|| panic!("{arg}: no {name}"));
            let mut packed_shape = shape.clone();
            *packed_shape.last_mut().unwrap() = packed_len(64, bits);
            assert_eq!(
                (t.dtype, t.shape),
                (Dtype::U8, &packed_shape[..]),
                "{arg} {name}"
            );
            want_names.push(name.to_string());
            let sc = qf
                .get(&format!("{name}.scales"))
                .unwrap_or_else(|| panic!("{arg}: no {name}.scales"));
            want_names.push(format!("{name}.scales"));
            let (sd, ss): (Dtype, Vec<usize>) = match kind {
                Kind::Block(b) => {
                    let mut sh = shape.clone();
                    *sh.last_mut().unwrap() = 64 / b;
                    (Dtype::U8, sh)
                }
                // the scales take the block grid's shape (io::quantized)
                Kind::Group(g) => {
                    let mut sh = shape.clone();
                    *sh.last_mut().unwrap() = 64 / g;
                    (Dtype::F64, sh)
                }
                Kind::ChannelAsym => {
                    let mut sh = shape.clone();
                    *sh.last_mut().unwrap() = 1;
                    (Dtype::F64, sh)
                }
                Kind::Tensor => (Dtype::F64, vec![1]),
            };
            assert_eq!((sc.dtype, sc.shape), (sd, &ss[..]), "{arg} {name}.scales");
            if let Kind::ChannelAsym = kind {
                let z = qf
                    .get(&format!("{name}.zeros"))
                    .unwrap_or_else(|| panic!("{arg}: no {name}.zeros"));
                assert_eq!((z.dtype, z.shape), (Dtype::F64, &ss[..]), "{arg}");
                let z = z.to_f64_vec().unwrap();
                assert!(z
                    .iter()
                    .all(|&v| v == v.round() && (0.0..=255.0).contains(&v)));
                want_names.push(format!("{name}.zeros"));
            }
            if canonical == "nvfp4" {
                let g = qf
                    .get(&format!("{name}.tensor_scale"))
                    .unwrap_or_else(|| panic!("{arg}: no {name}.tensor_scale"));
                assert_eq!((g.dtype, g.shape), (Dtype::F32, &[1usize][..]), "{arg}");
                if *name == "w" {
                    // g = RN32(amax / 2688)
                    let amax = w.iter().fold(0f64, |m, v| m.max(v.abs() as f64));
                    assert_eq!(g.to_f32_vec().unwrap(), [(amax / 2688.0) as f32]);
                }
                want_names.push(format!("{name}.tensor_scale"));
            }
        }
        let mut names: Vec<String> = qf.names().iter().map(|n| n.to_string()).collect();
        names.sort();
        want_names.sort();
        assert_eq!(names, want_names, "{arg}: tensors of the quantized file");
        for (name, dtype, shape, bytes) in &orig[3..] {
            let t = qf.get(name).unwrap();
            assert_eq!(
                (t.dtype, t.shape, t.bytes),
                (*dtype, &shape[..], *bytes),
                "{arg}"
            );
        }

        ok(&["dequantize", s(&q), "-o", s(&d)]);
        let df = read_st(&d);
        assert_eq!(
            df.names(),
            orig.iter().map(|o| o.0).collect::<Vec<_>>(),
            "{arg}: tensors of the dequantized file"
        );
        assert_eq!(df.metadata().get("format").map(String::as_str), Some("pt"));
        for (name, dtype, shape, bytes) in &orig {
            let t = df.get(name).unwrap();
            assert_eq!((t.dtype, t.shape), (*dtype, &shape[..]), "{arg} {name}");
            if *dtype == Dtype::I32 || shape.len() < 2 {
                assert_eq!(t.bytes, *bytes, "{arg} {name}: copied byte for byte");
            }
        }
        // the values equal `quantize X.npy` bit for bit, F32, F16 and BF16
        for (name, _, _) in &npys {
            let (x, v) = (
                dir.path().join(format!("{name}.npy")),
                dir.path().join("v.npy"),
            );
            ok(&["quantize", s(&x), "--scheme", arg, "-o", s(&v)]);
            let bytes: Vec<u8> = match read_npy(&v).data {
                Data::F32(v) => le32(&v),
                Data::F16(v) | Data::BF16(v) => le16(&v),
                d => panic!("{arg} {name}: {} values", d.dtype_name()),
            };
            assert!(
                df.get(name).unwrap().bytes == bytes,
                "{arg} {name}: dequantized values differ from `quantize {name}.npy`"
            );
        }
        // and they are close to the originals
        let dw = df.get("w").unwrap().to_f32_vec().unwrap();
        let (num, den) = dw.iter().zip(&w).fold((0f64, 0f64), |(a, b), (y, x)| {
            let (y, x) = (*y as f64, *x as f64);
            (a + (y - x) * (y - x), b + x * x)
        });
        let rel = (num / den).sqrt();
        assert!(rel > 0.0 && rel < max_rel, "{arg}: relative error {rel}");
    }
}

fn raw_st(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.to_string();
    while !h.len().is_multiple_of(8) {
        h.push(' ');
    }
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn bad_input_is_one_clear_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let (out_st, out_npy) = (p("out.safetensors"), p("out.npy"));
    let (scales, codes) = (p("s.npy"), p("c.npy"));
    let data: Vec<u8> = weights(64, 9, 1.0)
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let good = raw_st(
        r#"{"w":{"dtype":"F32","shape":[2,32],"data_offsets":[0,256]}}"#,
        &data,
    );
    let mut noise = 0x1234_5678_9abc_def0u64;
    let random: Vec<u8> = (0..300)
        .map(|_| {
            noise ^= noise << 13;
            noise ^= noise >> 7;
            noise ^= noise << 17;
            (noise >> 24) as u8
        })
        .collect();
    let mut twice = data.clone();
    twice.extend_from_slice(&data[..128]);
    let bad_files: Vec<(&str, Vec<u8>, &str)> = vec![
        ("random.safetensors", random, "not a .safetensors file"),
        (
            "cut.safetensors",
            good[..good.len() - 1].to_vec(),
            "truncated",
        ),
        (
            "beyond.safetensors",
            raw_st(
                r#"{"w":{"dtype":"F32","shape":[2,32],"data_offsets":[256,512]}}"#,
                &data,
            ),
            "beyond the data section",
        ),
        (
            "overlap.safetensors",
            raw_st(
                r#"{"a":{"dtype":"F32","shape":[2,32],"data_offsets":[0,256]},"b":{"dtype":"F32","shape":[2,32],"data_offsets":[128,384]}}"#,
                &twice,
            ),
            "overlap in the data section",
        ),
        (
            "fp4.safetensors",
            raw_st(
                r#"{"w":{"dtype":"F4","shape":[2,32],"data_offsets":[0,64]}}"#,
                &data[..64],
            ),
            "dtype 'F4' is not supported",
        ),
    ];
    for (name, bytes, needle) in &bad_files {
        let f = p(name);
        std::fs::write(&f, bytes).unwrap();
        fails(
            &["quantize", s(&f), "--scheme", "mxfp4", "-o", s(&out_st)],
            &[&out_st],
            needle,
        );
        fails(&["dequantize", s(&f), "-o", s(&out_st)], &[&out_st], needle);
    }
    // the good file is accepted (the bad ones fail for their defect)
    std::fs::write(p("good.safetensors"), &good).unwrap();
    fails(
        &["dequantize", s(&p("good.safetensors")), "-o", s(&out_st)],
        &[&out_st],
        "not written by `lowprec quantize`",
    );
    ok(&[
        "quantize",
        s(&p("good.safetensors")),
        "--scheme",
        "mxfp4",
        "-o",
        s(&out_st),
    ]);
    std::fs::remove_file(&out_st).unwrap();

    // NaN into an integer grid: .npy and .safetensors
    let mut x = weights(64, 10, 1.0);
    x[37] = f32::NAN;
    write_npy(&p("nan.npy"), vec![2, 32], Data::F32(x.clone()));
    fails(
        &[
            "quantize",
            s(&p("nan.npy")),
            "--scheme",
            "int8",
            "-o",
            s(&out_npy),
            "--scales",
            s(&scales),
            "--codes",
            s(&codes),
        ],
        &[&out_npy, &scales, &codes],
        "NaN",
    );
    let xb: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(
        p("nan.safetensors"),
        raw_st(
            r#"{"w":{"dtype":"F32","shape":[2,32],"data_offsets":[0,256]}}"#,
            &xb,
        ),
    )
    .unwrap();
    fails(
        &[
            "quantize",
            s(&p("nan.safetensors")),
            "--scheme",
            "int8",
            "-o",
            s(&out_st),
        ],
        &[&out_st],
        "NaN",
    );

    // a last axis of 40: not whole blocks of 32 without :pad
    let x40 = weights(3 * 40, 11, 1.0);
    write_npy(&p("x40.npy"), vec![3, 40], Data::F32(x40.clone()));
    fails(
        &[
            "quantize",
            s(&p("x40.npy")),
            "--scheme",
            "mx:fp8-e4m3",
            "-o",
            s(&out_npy),
            "--scales",
            s(&scales),
        ],
        &[&out_npy, &scales],
        "not a multiple",
    );
    // with :pad: two scales per row, the same as zero-padding the rows to 64
    ok(&[
        "quantize",
        s(&p("x40.npy")),
        "--scheme",
        "mx:fp8-e4m3:pad",
        "-o",
        s(&out_npy),
        "--scales",
        s(&scales),
        "--codes",
        s(&codes),
    ]);
    let v = read_npy(&out_npy);
    assert_eq!(v.shape, [3, 40]);
    let Data::F32(v) = v.data else {
        panic!("float32")
    };
    let sc = read_npy(&scales);
    assert_eq!(sc.shape, [3, 2]);
    let sc = u8s(sc);
    let c = u8s(read_npy(&codes));
    let x64: Vec<f32> = x40
        .chunks(40)
        .flat_map(|r| r.iter().copied().chain([0.0; 24]))
        .collect();
    write_npy(&p("x64.npy"), vec![3, 64], Data::F32(x64));
    let (v64, s64, c64) = (p("v64.npy"), p("s64.npy"), p("c64.npy"));
    ok(&[
        "quantize",
        s(&p("x64.npy")),
        "--scheme",
        "mx:fp8-e4m3",
        "-o",
        s(&v64),
        "--scales",
        s(&s64),
        "--codes",
        s(&c64),
    ]);
    let Data::F32(vp) = read_npy(&v64).data else {
        panic!("float32")
    };
    let (sp, cp) = (u8s(read_npy(&s64)), u8s(read_npy(&c64)));
    assert_eq!(sc, sp, "padded scales");
    for r in 0..3 {
        for i in 0..40 {
            assert_eq!(
                v[40 * r + i].to_bits(),
                vp[64 * r + i].to_bits(),
                "[{r}, {i}]"
            );
            assert_eq!(c[40 * r + i], cp[64 * r + i], "[{r}, {i}]");
        }
    }

    for f in [&out_npy, &scales, &codes] {
        std::fs::remove_file(f).unwrap();
    }

    // impossible combinations of the scheme axes: the option named, and what would work
    for (scheme, needle) in [
        ("fp8:tile=128x128", ":pad"),
        ("rht12+mxfp4", "not a power of two"),
        ("rht64+mxfp4:pad", "does not divide the last axis"),
        ("if4:scale=ue4m3", "sign bit"),
        ("mxfp8:scale=fp8-e4m3", "E8M0"),
        ("nvfp4:clip=0.9", "integer"),
    ] {
        fails(
            &[
                "quantize",
                s(&p("x40.npy")),
                "--scheme",
                scheme,
                "-o",
                s(&out_npy),
            ],
            &[&out_npy],
            needle,
        );
    }

    // an unknown scheme: the message lists the grammar
    fails(
        &[
            "quantize",
            s(&p("x40.npy")),
            "--scheme",
            "mxfp5",
            "-o",
            s(&out_npy),
        ],
        &[&out_npy],
        "bad scheme `mxfp5`",
    );
    let o = run(&[
        "quantize",
        s(&p("x40.npy")),
        "--scheme",
        "mxfp5",
        "-o",
        s(&out_npy),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    for part in ["mx:ELEM", "nvfp4", "tensor:FORMAT", "intB"] {
        assert!(err.contains(part), "{part} not in {err}");
    }

    // the output is the input: refused, input untouched
    for f in [p("x40.npy"), p("good.safetensors")] {
        let before = std::fs::read(&f).unwrap();
        let o = run(&["quantize", s(&f), "--scheme", "int8", "-o", s(&f)]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("is the input"), "{err}");
        assert_eq!(std::fs::read(&f).unwrap(), before);
    }
    let before = std::fs::read(p("good.safetensors")).unwrap();
    let o = run(&[
        "dequantize",
        s(&p("good.safetensors")),
        "-o",
        s(&p("good.safetensors")),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is the input"));
    assert_eq!(std::fs::read(p("good.safetensors")).unwrap(), before);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn errors_after_the_conversion_are_one_line_too() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let x = weights(64, 12, 1.0);
    write_npy(&p("x.npy"), vec![2, 32], Data::F32(x.clone()));
    let (out, scales, packed) = (p("out.npy"), p("s.npy"), p("p.npy"));
    let nowhere = p("no/such/dir/y.npy");
    fails(
        &[
            "quantize",
            s(&p("x.npy")),
            "--scheme",
            "int8",
            "-o",
            s(&nowhere),
        ],
        &[&nowhere],
        "cannot write",
    );
    fails(
        &[
            "quantize",
            s(&p("x.npy")),
            "--scheme",
            "bf16",
            "-o",
            s(&out),
            "--scales",
            s(&scales),
        ],
        &[&out, &scales],
        "no scales",
    );
    fails(
        &[
            "quantize",
            s(&p("x.npy")),
            "--scheme",
            "cast:fp32",
            "-o",
            s(&out),
            "--codes",
            s(&packed),
        ],
        &[&out, &packed],
        "wider than 16 bits",
    );
    // a model whose second tensor holds a NaN
    let mut y = x.clone();
    y[3] = f32::NAN;
    let b: Vec<u8> = x.iter().chain(&y).flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(
        p("m.safetensors"),
        raw_st(
            r#"{"a":{"dtype":"F32","shape":[2,32],"data_offsets":[0,256]},"b":{"dtype":"F32","shape":[2,32],"data_offsets":[256,512]}}"#,
            &b,
        ),
    )
    .unwrap();
    let out_st = p("q.safetensors");
    fails(
        &[
            "quantize",
            s(&p("m.safetensors")),
            "--scheme",
            "int8",
            "-o",
            s(&out_st),
        ],
        &[&out_st],
        "NaN",
    );
}

#[test]
fn float16_and_bfloat16_outputs_are_rounded_once() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    // (format, input bits, scheme): values scale·q just above a float16/bfloat16 midpoint
    // that binary32 rounds onto the midpoint
    let cases: [(&FloatFormat, Vec<u16>, &str); 2] = [
        (&FloatFormat::FP16, vec![0xbe6d, 0x3c00], "int4:clip=0.87"),
        (&FloatFormat::BF16, vec![0x3fc3], "int4:clip=0.55"),
    ];
    for (fmt, bits, scheme) in cases {
        let n = bits.len();
        let bf = *fmt == FloatFormat::BF16;
        let wide: Vec<f64> = bits
            .iter()
            .map(|&b| {
                if bf {
                    f32::from_bits((b as u32) << 16) as f64
                } else {
                    fmt.decode(b as u64)
                }
            })
            .collect();
        let data = if bf {
            Data::BF16(bits.clone())
        } else {
            Data::F16(bits.clone())
        };
        write_npy(&p("x.npy"), vec![1, n], data);
        write_npy(&p("x64.npy"), vec![1, n], Data::F64(wide));
        ok(&[
            "quantize",
            s(&p("x.npy")),
            "--scheme",
            scheme,
            "-o",
            s(&p("v.npy")),
        ]);
        ok(&[
            "quantize",
            s(&p("x64.npy")),
            "--scheme",
            scheme,
            "-o",
            s(&p("v64.npy")),
        ]);
        let got = match read_npy(&p("v.npy")).data {
            Data::F16(v) | Data::BF16(v) => v,
            d => panic!("{scheme}: {} values", d.dtype_name()),
        };
        let Data::F64(exact) = read_npy(&p("v64.npy")).data else {
            panic!("float64")
        };
        let want: Vec<u16> = exact
            .iter()
            .map(|&v| fmt.encode(v, &RoundOptions::default()).unwrap() as u16)
            .collect();
        assert_eq!(
            got, want,
            "{fmt} {scheme}: binary64 values {exact:?} rounded once"
        );
    }
}

/// Outputs are written safely: a symbolic link, a device or a directory as the target is
/// refused (the link and the device stay what they were); two outputs naming one file are
/// refused; a command with several outputs writes all of them or none (a later output that
/// cannot be written leaves no earlier one behind); a file name of 250 bytes works (the
/// temporary name does not grow with it).
#[test]
fn outputs_are_written_safely() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = d.join("x.npy");
    common::write_npy(
        &x,
        vec![4, 64],
        Data::F32((0..256).map(|i| i as f32 * 0.01 - 1.0).collect()),
    );
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let link = d.join("link.npy");
    std::os::unix::fs::symlink(d.join("elsewhere.npy"), &link).unwrap();
    let q = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["quantize", &s(&x), "-s", "mxfp4"]
            .iter()
            .map(|a| a.to_string())
            .collect();
        v.extend(extra.iter().map(|a| a.to_string()));
        v
    };
    let args = q(&["-o", &s(&link)]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    common::fails(
        &refs,
        &[&d.join("elsewhere.npy")],
        "is a symbolic link, not a regular file",
    );
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let args = q(&["-o", "/dev/null"]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    common::fails(
        &refs,
        &[],
        "is a device, FIFO or socket, not a regular file",
    );
    assert!(!std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_file());
    let args = q(&["-o", &s(d)]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    common::fails(&refs, &[], "is a directory, not a regular file");
    let y = d.join("y.npy");
    let args = q(&["-o", &s(&y), "--scales", &s(&y)]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    common::fails(&refs, &[&y], "two outputs name one file");
    let args = q(&[
        "-o",
        &s(&y),
        "--scales",
        &s(&d.join("no/such/folder/s.npy")),
    ]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    common::fails(&refs, &[&y], "cannot write");
    let long = d.join(format!("{}.npy", "a".repeat(246)));
    let args = q(&["-o", &s(&long)]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = common::run(&refs);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(long.exists());
}
