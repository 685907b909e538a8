//! Layer groups of a checkpoint: each tensor's name mapped to a group (`embeddings`,
//! `attention`, `mlp`, `norms`, `other`, or groups of the user's own), and the report's
//! totals per group and scheme ([`group_totals`]), merged exactly as [`report::totals`]
//! merges them.
//!
//! ```
//! use lowprec::layer_group::LayerGroups;
//!
//! let g = LayerGroups::default();
//! assert_eq!(g.group_of("model.layers.0.self_attn.q_proj.weight"), "attention");
//! assert_eq!(g.group_of("model.layers.0.post_attention_layernorm.weight"), "norms");
//! assert_eq!(g.group_of("encoder.layer.3.output.dense.weight"), "mlp");
//! assert_eq!(g.group_of("blk.0.ffn_up.weight"), "mlp");
//! assert_eq!(g.group_of("token_embd.weight"), "embeddings");
//! assert_eq!(g.group_of("pooler.dense.weight"), "other");
//! // a group of one's own, tried before the defaults
//! let mine = LayerGroups::with(vec![LayerGroups::parse_spec("qk=*.query.*,*.key.*")?]);
//! assert_eq!(mine.group_of("encoder.layer.0.attention.self.key.bias"), "qk");
//! assert_eq!(mine.group_of("encoder.layer.0.attention.self.value.bias"), "attention");
//! # Ok::<(), lowprec::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::io::checkpoint::glob;
use crate::report::{self, Row};

/// The default groups in the order they are tried, each with its glob patterns
/// ([`crate::io::checkpoint::glob`]: `*` any run of characters, `?` one), matched against
/// the tensor's name in lower case (so `LayerNorm` is `layernorm`). The first group with a
/// matching pattern is the tensor's; no match: `other`.
///
/// * `norms` first, so that `post_attention_layernorm`, `attn_norm`, `ffn_norm` and BERT's
///   `embeddings.LayerNorm` are norms: a name or component ending in `norm` (`layernorm`,
///   `layer_norm`, `rmsnorm`, `q_norm`, `model.norm`), or in `norm` and one character
///   (`norm1`), or `norm_` within it (`layernorm_embedding`): `*norm`, `*norm.*`,
///   `*norm?.*`, `*norm_*` — not `*norm*`, which takes `subnormal` and `normal`; GPT-2's
///   and Whisper's `ln_1`, `ln_f`, `attn_ln`: `ln_*`, `*.ln_*`, `*_ln.*`, `*.ln.*`;
/// * `embeddings`: `*embed*` (`embed_tokens`, `tok_embeddings`, `word_embeddings`,
///   `position_embeddings`, `token_type_embeddings`), `*embd*` (GGUF's `token_embd`),
///   `*wte*`, `*wpe*`, `*lm_head*`, and the top-level `output.weight` / `output.bias`
///   (Llama's and GGUF's output projection);
/// * `attention`: `*attn*` (`self_attn`, `c_attn`, GGUF's `attn_q`), `*attention*`,
///   `*q_proj*`, `*k_proj*`, `*v_proj*`, `*o_proj*`, `*qkv*`, and the components
///   `*.query.*`, `*.key.*`, `*.value.*`, `*.wq.*`, `*.wk.*`, `*.wv.*` (no `*.wo.*`:
///   T5's MLP has a `wo`; Llama's `attention.wo` is taken by `*attention*`);
/// * `mlp`: `*mlp*`, `*ffn*`, `*feed_forward*`, `*intermediate*`, `*gate_proj*`,
///   `*up_proj*`, `*down_proj*`, `*fc1*`, `*fc2*`, `*experts*`, `*moe*`,
///   `*densereludense*` (T5's `wi`, `wo`), the components `*.w1.*`, `*.w2.*`, `*.w3.*`, and
///   `*output.dense*` (BERT's second MLP layer: its attention output,
///   `attention.output.dense`, is taken by `attention` before).
pub const DEFAULT_GROUPS: [(&str, &[&str]); 4] = [
    (
        "norms",
        &[
            "*norm", "*norm.*", "*norm?.*", "*norm_*", "ln_*", "*.ln_*", "*_ln.*", "*.ln.*",
        ],
    ),
    (
        "embeddings",
        &[
            "*embed*",
            "*embd*",
            "*wte*",
            "*wpe*",
            "*lm_head*",
            "output.weight",
            "output.bias",
        ],
    ),
    (
        "attention",
        &[
            "*attn*",
            "*attention*",
            "*q_proj*",
            "*k_proj*",
            "*v_proj*",
            "*o_proj*",
            "*qkv*",
            "*.query.*",
            "*.key.*",
            "*.value.*",
            "*.wq.*",
            "*.wk.*",
            "*.wv.*",
        ],
    ),
    (
        "mlp",
        &[
            "*mlp*",
            "*ffn*",
            "*feed_forward*",
            "*intermediate*",
            "*gate_proj*",
            "*up_proj*",
            "*down_proj*",
            "*fc1*",
            "*fc2*",
            "*experts*",
            "*moe*",
            "*densereludense*",
            "*.w1.*",
            "*.w2.*",
            "*.w3.*",
            "*output.dense*",
        ],
    ),
];

/// The group of the tensors no pattern matches.
pub const OTHER: &str = "other";

/// How tensor names map to layer groups: the user's groups (tried first, in order, their
/// globs matched against the name as it is, case-sensitive as `--include`), then
/// [`DEFAULT_GROUPS`] (matched case-insensitively), then [`OTHER`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LayerGroups {
    /// The user's groups: a name and its glob patterns.
    pub user: Vec<(String, Vec<String>)>,
}

impl LayerGroups {
    /// The default groups after the user's `groups` (name, globs), tried in order.
    pub fn with(groups: Vec<(String, Vec<String>)>) -> LayerGroups {
        LayerGroups { user: groups }
    }

    /// Parse a group as `--group` takes it: `NAME=GLOB[,GLOB…]`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] without `=`, with an empty name or no pattern.
    pub fn parse_spec(spec: &str) -> Result<(String, Vec<String>)> {
        let bad = |why: &str| {
            Error::InvalidArgument(format!(
                "--group {spec:?}: {why} (give NAME=GLOB[,GLOB…], e.g. qk='*.q_proj.*,*.k_proj.*')"
            ))
        };
        let (name, globs) = spec.split_once('=').ok_or_else(|| bad("no `=`"))?;
        let name = name.trim();
        if name.is_empty() {
            return Err(bad("no group name before `=`"));
        }
        let globs: Vec<String> = globs
            .split(',')
            .map(str::trim)
            .filter(|g| !g.is_empty())
            .map(String::from)
            .collect();
        if globs.is_empty() {
            return Err(bad("no pattern after `=`"));
        }
        Ok((name.to_string(), globs))
    }

    /// The group of the tensor `name`: the first user group with a matching glob, else the
    /// first of [`DEFAULT_GROUPS`] with a pattern matching the lower-case name, else
    /// [`OTHER`].
    pub fn group_of(&self, name: &str) -> &str {
        if let Some((g, _)) = self
            .user
            .iter()
            .find(|(_, globs)| globs.iter().any(|p| glob(p, name)))
        {
            return g;
        }
        let lower = name.to_lowercase();
        DEFAULT_GROUPS
            .iter()
            .find(|(_, globs)| globs.iter().any(|p| glob(p, &lower)))
            .map_or(OTHER, |(g, _)| g)
    }

    /// Every group name in the order the report prints them: the user's groups, then
    /// `embeddings`, `attention`, `mlp`, `norms` (a model's order), then [`OTHER`]; a name
    /// given twice once.
    pub fn names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = vec![];
        let defaults = ["embeddings", "attention", "mlp", "norms", OTHER];
        for g in self.user.iter().map(|(g, _)| g.as_str()).chain(defaults) {
            if !out.contains(&g) {
                out.push(g);
            }
        }
        out
    }
}

/// The totals of one layer group through one scheme.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupTotal {
    /// The group's name.
    pub group: String,
    /// The tensors of the group (those whose row for this scheme has no error).
    pub tensors: usize,
    /// The merged row, as [`report::totals`] makes it, with `tensor` `"(group:NAME)"`.
    pub row: Row,
}

/// The rows of `rows` merged per layer group and scheme: for each group of
/// [`LayerGroups::names`] that holds a tensor, one [`GroupTotal`] per label of `schemes`
/// (in their order), made by [`report::totals`] over the group's rows — error statistics
/// merged exactly, bits per element weighted by elements, rows with an error left out.
/// Groups holding no tensor are left out.
pub fn group_totals<S>(
    rows: &[Row],
    schemes: &[(String, S)],
    groups: &LayerGroups,
) -> Vec<GroupTotal> {
    let of: Vec<&str> = rows.iter().map(|r| groups.group_of(&r.tensor)).collect();
    let mut out = vec![];
    for g in groups.names() {
        let mine: Vec<Row> = rows
            .iter()
            .zip(&of)
            .filter(|(_, o)| **o == g)
            .map(|(r, _)| r.clone())
            .collect();
        if mine.is_empty() {
            continue;
        }
        for mut row in report::totals(&mine, schemes) {
            let tensors = mine
                .iter()
                .filter(|r| r.scheme == row.scheme && r.error.is_none())
                .count();
            row.tensor = format!("(group:{g})");
            out.push(GroupTotal {
                group: g.to_string(),
                tensors,
                row,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{builtin, rows, schemes, totals, Tensor, Values};

    #[test]
    fn names_of_common_checkpoints_fall_into_their_groups() {
        let g = LayerGroups::default();
        let cases = [
            // Llama / Mistral / Qwen (Hugging Face)
            ("model.embed_tokens.weight", "embeddings"),
            ("model.layers.0.self_attn.q_proj.weight", "attention"),
            ("model.layers.0.self_attn.o_proj.weight", "attention"),
            ("model.layers.0.self_attn.q_norm.weight", "norms"),
            ("model.layers.0.mlp.gate_proj.weight", "mlp"),
            ("model.layers.0.mlp.down_proj.weight", "mlp"),
            ("model.layers.0.input_layernorm.weight", "norms"),
            ("model.layers.0.post_attention_layernorm.weight", "norms"),
            ("model.norm.weight", "norms"),
            ("lm_head.weight", "embeddings"),
            // Llama (Meta's layout), Mixtral
            ("tok_embeddings.weight", "embeddings"),
            ("layers.0.attention.wq.weight", "attention"),
            ("layers.0.feed_forward.w1.weight", "mlp"),
            ("layers.0.attention_norm.weight", "norms"),
            ("layers.0.block_sparse_moe.experts.3.w2.weight", "mlp"),
            ("output.weight", "embeddings"),
            // GPT-2
            ("transformer.wte.weight", "embeddings"),
            ("transformer.wpe.weight", "embeddings"),
            ("transformer.h.0.ln_1.weight", "norms"),
            ("transformer.h.0.attn.c_attn.weight", "attention"),
            ("transformer.h.0.mlp.c_fc.weight", "mlp"),
            ("transformer.ln_f.bias", "norms"),
            // BERT
            ("embeddings.word_embeddings.weight", "embeddings"),
            ("embeddings.token_type_embeddings.weight", "embeddings"),
            ("embeddings.LayerNorm.weight", "norms"),
            ("encoder.layer.0.attention.self.query.weight", "attention"),
            ("encoder.layer.0.attention.output.dense.weight", "attention"),
            ("encoder.layer.0.attention.output.LayerNorm.bias", "norms"),
            ("encoder.layer.0.intermediate.dense.weight", "mlp"),
            ("encoder.layer.0.output.dense.weight", "mlp"),
            ("encoder.layer.0.output.LayerNorm.weight", "norms"),
            ("pooler.dense.weight", "other"),
            // GGUF
            ("token_embd.weight", "embeddings"),
            ("blk.0.attn_qkv.weight", "attention"),
            ("blk.0.attn_norm.weight", "norms"),
            ("blk.0.ffn_gate.weight", "mlp"),
            ("blk.0.ffn_norm.weight", "norms"),
            ("output_norm.weight", "norms"),
            // phi, OPT, T5
            ("model.layers.0.mlp.fc1.weight", "mlp"),
            ("decoder.layers.0.self_attn.out_proj.weight", "attention"),
            ("decoder.layers.0.FC2.weight", "mlp"),
            (
                "encoder.block.0.layer.0.SelfAttention.q.weight",
                "attention",
            ),
            ("encoder.block.0.layer.1.DenseReluDense.wi.weight", "mlp"),
            ("encoder.block.0.layer.1.DenseReluDense.wo.weight", "mlp"),
            ("encoder.block.0.layer.1.layer_norm.weight", "norms"),
            ("blocks.0.norm1.weight", "norms"),
            ("model.decoder.layernorm_embedding.bias", "norms"),
            ("decoder.blocks.0.attn_ln.weight", "norms"),
            ("model.layers.0.input_rmsnorm.weight", "norms"),
            ("normalizer.running_mean", "other"),
            ("layers.0.attention.wo.weight", "attention"),
        ];
        for (name, want) in cases {
            assert_eq!(g.group_of(name), want, "{name}");
        }
        // the built-in tensors have no layer names
        for t in builtin() {
            assert_eq!(g.group_of(&t.name), OTHER, "{}", t.name);
        }
    }

    #[test]
    fn user_groups_come_first_in_order_and_specs_are_checked() {
        let g = LayerGroups::with(vec![
            LayerGroups::parse_spec("first= *.0.* , *.1.*").unwrap(),
            LayerGroups::parse_spec("attention=*gaussian*").unwrap(),
            LayerGroups::parse_spec("late=*.1.*,*Norm*").unwrap(),
        ]);
        assert_eq!(
            g.user[0],
            ("first".into(), vec!["*.0.*".into(), "*.1.*".into()])
        );
        assert_eq!(g.group_of("layers.1.mlp.w1.weight"), "first");
        assert_eq!(g.group_of("gaussian_weight"), "attention");
        // user globs keep their case; the defaults do not
        assert_eq!(g.group_of("embeddings.LayerNorm.weight"), "late");
        assert_eq!(g.group_of("embeddings.layernorm.weight"), "norms");
        assert_eq!(
            g.names(),
            [
                "first",
                "attention",
                "late",
                "embeddings",
                "mlp",
                "norms",
                "other"
            ]
        );
        for bad in ["nogroup", "=*", "x=", "x= , "] {
            assert!(LayerGroups::parse_spec(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn group_totals_merge_exactly_as_totals_do() {
        let t = |name: &str, seed| {
            let x = crate::report::normal_samples(2 * 96, seed);
            Tensor::new(name, vec![2, 96], Values::F64(x)).unwrap()
        };
        let ts = [
            t("l.0.attn.q_proj.weight", 1),
            t("l.0.mlp.up_proj.weight", 2),
            t("l.0.attn.k_proj.weight", 3),
            t("l.0.norm.weight", 4),
        ];
        let s = schemes(&["fp8-e4m3", "int4:group=32"]).unwrap();
        let r = rows(&ts, &s, |_, _| {});
        let g = group_totals(&r, &s, &LayerGroups::default());
        let names: Vec<(&str, &str, usize)> = g
            .iter()
            .map(|t| (t.group.as_str(), t.row.scheme.as_str(), t.tensors))
            .collect();
        assert_eq!(
            names,
            [
                ("attention", "fp8-e4m3", 2),
                ("attention", "int4:group=32", 2),
                ("mlp", "fp8-e4m3", 1),
                ("mlp", "int4:group=32", 1),
                ("norms", "fp8-e4m3", 1),
                ("norms", "int4:group=32", 1),
            ]
        );
        assert_eq!(g[0].row.tensor, "(group:attention)");
        // the attention group is the totals of its two tensors; a one-tensor group its row
        let attn: Vec<Row> = [0, 1, 4, 5].map(|i| r[i].clone()).to_vec();
        let want = totals(&attn, &s);
        assert_eq!(g[0].row.stats, want[0].stats);
        assert_eq!(g[1].row.sqnr_db, want[1].sqnr_db);
        assert_eq!(g[2].row.stats, r[2].stats);
        assert_eq!(g[2].row.bits_per_element, r[2].bits_per_element);
        // all groups merged are the totals, bit for bit
        let all = totals(&r, &s);
        for (k, tot) in all.iter().enumerate() {
            let merged = g
                .iter()
                .filter(|t| t.row.scheme == tot.scheme)
                .fold(crate::stats::ErrorStats::default(), |a, t| {
                    a.merge(&t.row.stats)
                });
            assert_eq!(merged, tot.stats, "{k}");
        }
        // one group holding everything is the totals
        let one = LayerGroups::with(vec![("all".into(), vec!["*".into()])]);
        let g1 = group_totals(&r, &s, &one);
        assert_eq!(g1.len(), 2);
        for (a, b) in g1.iter().zip(&all) {
            assert_eq!((a.tensors, &a.row.stats), (4, &b.stats));
        }
    }
}
