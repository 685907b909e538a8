//! `lowprec report --summary`'s totals per layer group and scheme
//! ([`lowprec::layer_group`]): the table, the `--json` records and the `--csv` rows.

use super::report::{fmt_pct, na};
use crate::table::Table;
use anyhow::Result;
use lowprec::layer_group::{GroupTotal, LayerGroups, OTHER};
use lowprec::report::Row;
use serde::Serialize;

/// The groups of `--group NAME=GLOB[,GLOB…]` (in order, before the defaults).
pub fn parse(specs: &[String]) -> Result<LayerGroups> {
    Ok(LayerGroups::with(
        specs
            .iter()
            .map(|s| LayerGroups::parse_spec(s))
            .collect::<lowprec::Result<Vec<_>>>()?,
    ))
}

/// One group and scheme as `--json` writes it: the group's name, its tensors, and the
/// fields of a totals record (`tensor` `"(group:NAME)"`).
#[derive(Serialize)]
pub struct JsonGroup<'a, R: Serialize> {
    group: &'a str,
    tensors: usize,
    #[serde(flatten)]
    row: R,
}

/// The `--json` records of `groups`, each row written as `record` writes it.
pub fn json<'a, R: Serialize>(
    groups: &'a [GroupTotal],
    record: impl Fn(&'a Row) -> R,
) -> Vec<JsonGroup<'a, R>> {
    groups
        .iter()
        .map(|g| JsonGroup {
            group: &g.group,
            tensors: g.tensors,
            row: record(&g.row),
        })
        .collect()
}

/// The rows of `groups` (for `--csv`, after the totals: `tensor` is `(group:NAME)`).
pub fn rows(groups: &[GroupTotal]) -> impl Iterator<Item = &Row> {
    groups.iter().map(|g| &g.row)
}

/// The table of `groups` as `--summary` prints it after the totals: a heading and the
/// table; when every tensor is in one group, one line saying which instead (the table
/// would repeat the totals).
pub fn text(groups: &[GroupTotal], wide: bool) -> String {
    let mut names: Vec<&str> = groups.iter().map(|g| g.group.as_str()).collect();
    names.dedup();
    if names.len() <= 1 {
        let name = names.first().copied().unwrap_or(OTHER);
        return format!(
            "Layer groups: every tensor is in `{name}` (--group NAME=GLOB defines groups).\n"
        );
    }
    let mut header = vec![
        "group",
        "scheme",
        "tensors",
        "elements",
        "bits/el",
        "rel err",
        "SQNR dB",
        "max abs err",
        "saturated",
        "flushed",
    ];
    if wide {
        header.extend(["cosine", "RMSE", "NMSE", "p50 abs", "p99 abs", "p99.9 abs"]);
    }
    let mut t = Table::new(&header);
    for g in groups {
        let r = &g.row;
        let mut cells = vec![
            g.group.clone(),
            r.scheme.clone(),
            g.tensors.to_string(),
            r.elements.to_string(),
            na(format!("{:.3}", r.bits_per_element), r.bits_per_element),
            na(format!("{:.3e}", r.rel_error), r.rel_error),
            na(format!("{:.2}", r.sqnr_db), r.sqnr_db),
            na(format!("{:.3e}", r.max_abs_error), r.max_abs_error),
            fmt_pct(r.saturated_share),
            fmt_pct(r.flushed_share),
        ];
        if wide {
            cells.push(na(format!("{:.6}", r.cosine), r.cosine));
            cells.extend([r.rmse, r.nmse, r.p50, r.p99, r.p999].map(|v| na(format!("{v:.3e}"), v)));
        }
        t.row(cells);
    }
    format!("By layer group:\n{}", t.render())
}
