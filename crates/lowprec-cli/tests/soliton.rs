//! `lowprec soliton`: the table and the JSON of the range-safe binary32 proof.

mod common;

use common::run;

#[test]
fn soliton_table_shows_binary32_tracking_binary64_and_naive_failing() {
    let o = run(&["soliton"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("NLS fundamental soliton: 256 points"),
        "{out}"
    );
    assert!(lines[1].contains("vs binary64") && lines[1].contains("energy drift"));
    assert_eq!(lines.len(), 2 + 9, "{out}");
    let naive: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("naive binary32"))
        .collect();
    assert_eq!(naive.len(), 3);
    assert!(
        naive[0].contains("NaN") && naive[2].contains("NaN"),
        "{out}"
    );
    assert!(!naive[1].contains("NaN"), "{out}");
    for (l, k) in lines
        .iter()
        .filter(|l| l.contains(" binary32 ") && !l.contains("naive"))
        .zip(["2^-67", "2^-1", "2^66"])
    {
        assert!(l.contains(k), "{l}");
    }
}

#[test]
fn soliton_json_records_and_options() {
    let o = run(&[
        "soliton",
        "--json",
        "--steps",
        "60",
        "--amplitude",
        "1e-30",
        "-a",
        "1e30",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 6);
    let u_steps = 60.0 * 2f64.powi(-24);
    for r in rows {
        assert_eq!(r["steps"], 60);
        match r["run"].as_str().unwrap() {
            "binary64" => assert_eq!(r["vs_binary64"], 0.0),
            "binary32" => {
                let d = r["vs_binary64"].as_f64().unwrap();
                assert!(d > 0.0 && d < 8.0 * u_steps, "{r}");
                assert!(d < r["vs_exact"].as_f64().unwrap() / 5.0, "{r}");
                assert!(r["state_exponent"].is_i64());
            }
            "naive binary32" => assert!(r["vs_binary64"].is_null(), "naive should be NaN: {r}"),
            other => panic!("unexpected run {other}"),
        }
    }
}

#[test]
fn soliton_bad_arguments_fail_in_one_line() {
    common::fails(
        &["soliton", "--steps", "0"],
        &[],
        "--steps must be at least 1",
    );
    common::fails(
        &["soliton", "--amplitude", "0"],
        &[],
        "is not a positive finite number",
    );
    common::fails(&["soliton", "--amplitude", "1e-200"], &[], "finite 1/P²");
}
