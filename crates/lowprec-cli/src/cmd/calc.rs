//! `lowprec calc EXPR`: an expression of literals and operations, each step rounded once,
//! shown with its exact value, its rounded value, code, bits and what happened.
//!
//! ```text
//! expr    := term [ '->' FORMAT ]
//! term    := OP '(' expr { ',' expr } ')' | FORMAT ':' NUMBER
//! ```
//!
//! A literal `FORMAT:NUMBER` is the number (decimal of any length, hex float, inf, nan)
//! rounded once into its format; an operation's result goes into the format after `->`, or
//! the format of its first operand.

use super::op::{parse_op, result_format};
use super::ProjectionArgs;
use crate::table::Table;
use anyhow::{bail, Result};
use lowprec::exact::Exact as Literal;
use lowprec::ops::{self, flag, Exact, Kind, Op, Outcome, Projection, CLASS_NAMES};
use lowprec::FloatFormat;
use std::process::ExitCode;

/// Arguments of `lowprec calc`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec calc 'fma(binary8p4se:1.5, binary8p4se:0.3, fp16:2.1) -> binary8p3se' -r rne --sat none
  lowprec calc 'add(bf16:1, bf16:0.00390625) -> bf16' -r rup
  lowprec calc 'sqrt(fp32:2) -> fp16' --json

Operations: the names of `lowprec op --help` (add, sub, mul, div, fma, faa, sqrt, recip, …).")]
pub struct Args {
    /// The expression, e.g. `mul(fp8-e4m3:1.75, fp8-e4m3:3) -> bf16`.
    #[arg(allow_hyphen_values = true)]
    pub expr: String,
    #[command(flatten)]
    pub projection: ProjectionArgs,
    /// Print JSON (one object per step) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// A parsed expression.
#[derive(Debug, Clone)]
pub enum Node {
    /// `FORMAT:NUMBER`.
    Literal {
        /// The literal's format.
        format: FloatFormat,
        /// The number as written.
        text: String,
        /// Its exact value.
        value: Literal,
    },
    /// `OP(args) [-> FORMAT]`.
    Call {
        /// The operation.
        op: Op,
        /// Its operands.
        args: Vec<Node>,
        /// The result format after `->`.
        out: Option<FloatFormat>,
    },
}

struct Parser<'a> {
    s: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.s[self.pos..].starts_with(char::is_whitespace) {
            self.pos += self.s[self.pos..].chars().next().map_or(1, char::len_utf8);
        }
    }
    fn word(&mut self) -> &str {
        self.ws();
        let start = self.pos;
        let rest = &self.s[start..];
        let mut end = 0;
        for (i, c) in rest.char_indices() {
            if c.is_whitespace() || "(),".contains(c) || rest[i..].starts_with("->") {
                break;
            }
            end = i + c.len_utf8();
        }
        self.pos += end;
        &self.s[start..start + end]
    }
    fn peek(&mut self, t: &str) -> bool {
        self.ws();
        self.s[self.pos..].starts_with(t)
    }
    fn expect(&mut self, t: &str) -> Result<()> {
        if !self.peek(t) {
            bail!(
                "malformed expression: expected `{t}` at column {} of `{}`; write OP(FORMAT:NUMBER, …) -> FORMAT",
                self.pos + 1,
                self.s
            );
        }
        self.pos += t.len();
        Ok(())
    }
    fn expr(&mut self) -> Result<Node> {
        let mut node = self.term()?;
        if self.peek("->") {
            self.pos += 2;
            let w = self.word().to_string();
            let f: FloatFormat = w.parse().map_err(|e| anyhow::anyhow!("after `->`: {e}"))?;
            match &mut node {
                Node::Call { out, .. } => *out = Some(f),
                Node::Literal { .. } => {
                    // a literal converted: Convert(literal) -> f
                    node = Node::Call {
                        op: Op::Convert,
                        args: vec![node],
                        out: Some(f),
                    };
                }
            }
        }
        Ok(node)
    }
    fn term(&mut self) -> Result<Node> {
        let w = self.word().to_string();
        if w.is_empty() {
            bail!(
                "malformed expression: expected an operation or FORMAT:NUMBER at column {} of `{}`",
                self.pos + 1,
                self.s
            );
        }
        if self.peek("(") {
            let op = parse_op(&w).map_err(anyhow::Error::msg)?;
            self.pos += 1;
            let mut args = vec![self.expr()?];
            while self.peek(",") {
                self.pos += 1;
                args.push(self.expr()?);
            }
            self.expect(")")?;
            if args.len() != op.arity() {
                bail!(
                    "{op} takes {} operands, {} given in `{}`",
                    op.arity(),
                    args.len(),
                    self.s
                );
            }
            return Ok(Node::Call {
                op,
                args,
                out: None,
            });
        }
        let Some((fname, num)) = w.split_once(':') else {
            bail!("the literal `{w}` needs a format: write FORMAT:NUMBER, e.g. fp32:{w}");
        };
        let format: FloatFormat = fname.parse()?;
        let value = super::encode::parse_value(num)?;
        Ok(Node::Literal {
            format,
            text: w.clone(),
            value,
        })
    }
}

/// Parse an expression.
pub fn parse(s: &str) -> Result<Node> {
    let mut p = Parser { s, pos: 0 };
    let n = p.expr()?;
    p.ws();
    if p.pos != s.len() {
        bail!(
            "malformed expression: unexpected `{}` at column {}; one expression, e.g. add(fp16:1, fp16:2) -> fp16",
            &s[p.pos..],
            p.pos + 1
        );
    }
    Ok(n)
}

/// One evaluated step.
pub struct Step {
    /// What was computed.
    pub what: String,
    /// The result's format.
    pub format: FloatFormat,
    /// The exact result (numeric steps).
    pub exact: Option<Exact>,
    /// The projected result.
    pub outcome: Outcome,
    /// The operation's kind.
    pub kind: Kind,
    /// The exact value as written (literals).
    pub written: Option<String>,
}

fn eval(
    n: &Node,
    prj: &Projection,
    seed: u64,
    steps: &mut Vec<Step>,
) -> Result<(FloatFormat, u64)> {
    let random = |i: usize| {
        let nb = prj.rounding.random_bits();
        if nb == 0 {
            0
        } else {
            lowprec::round::random_bits(seed, i as u64) >> (32 - nb)
        }
    };
    match n {
        Node::Literal {
            format,
            text,
            value,
        } => {
            let (e, o) = ops::project_literal(value, format, prj, random(steps.len()));
            let code = o.code.ok_or_else(|| {
                anyhow::anyhow!(
                    "{text}: NaN has no code in {}; choose a format with a NaN",
                    format.name()
                )
            })?;
            steps.push(Step {
                what: text.clone(),
                format: *format,
                exact: Some(e),
                outcome: o,
                kind: Kind::Numeric,
                written: text.split_once(':').map(|(_, n)| n.to_string()),
            });
            Ok((*format, code))
        }
        Node::Call { op, args, out } => {
            let mut operands = vec![];
            let mut names = vec![];
            for a in args {
                let (f, c) = eval(a, prj, seed, steps)?;
                names.push(format!("{}:{}", f.name(), f.shortest_decimal(c)));
                operands.push((f, c));
            }
            let out = result_format(*op, *out, operands[0].0)
                .or_else(|_| Ok::<_, anyhow::Error>(operands[0].0))?;
            let (e, o) = ops::evaluate(*op, &operands, &out, prj, random(steps.len()))?;
            let code = o.code.ok_or_else(|| {
                anyhow::anyhow!(
                    "{op}: the result is NaN and {} has no NaN; choose a result format with a NaN",
                    out.name()
                )
            })?;
            let shown_out = if op.kind() == Kind::Numeric {
                format!(" -> {}", out.name())
            } else {
                String::new()
            };
            steps.push(Step {
                what: format!("{}({}){shown_out}", op.name(), names.join(", ")),
                format: out,
                exact: e,
                outcome: o,
                kind: op.kind(),
                written: None,
            });
            Ok((out, code))
        }
    }
}

/// The exact value as text: the binary64 value when it is exact, else `≈` and 17 digits.
pub fn exact_text(e: &Exact) -> String {
    match e {
        Exact::Nan { .. } => "nan".into(),
        Exact::Inf(n) => if *n { "-inf" } else { "inf" }.into(),
        Exact::Zero(n) => if *n { "-0" } else { "0" }.into(),
        Exact::Val(w) => {
            let v = w.to_f64();
            let bits = 128 - w.sig.leading_zeros() - w.sig.trailing_zeros();
            if !w.sticky && bits <= 53 && v.is_finite() && v != 0.0 {
                format!("{v}")
            } else {
                format!("≈{v:.17e}")
            }
        }
    }
}

fn happened(flags: u8, exact: bool) -> String {
    let mut v = vec![];
    for (bit, name) in [
        (flag::INEXACT, "inexact"),
        (flag::OVERFLOW, "overflow"),
        (flag::UNDERFLOW, "underflow"),
        (flag::SATURATED, "saturated"),
        (flag::INVALID, "invalid (NaN)"),
    ] {
        if flags & bit != 0 {
            v.push(name);
        }
    }
    if v.is_empty() && exact {
        v.push("exact");
    }
    v.join(", ")
}

/// Run `lowprec calc`.
pub fn run(a: &Args) -> Result<ExitCode> {
    let node = parse(&a.expr)?;
    let prj = a.projection.projection();
    let mut steps = vec![];
    eval(&node, &prj, a.projection.seed, &mut steps)?;
    let mut t = Table::new(&[
        "step",
        "exact",
        "rounded",
        "shortest",
        "code",
        "bits",
        "what happened",
    ]);
    let mut json = vec![];
    for s in &steps {
        let code = s.outcome.code.unwrap_or(0);
        let (rounded, shortest, code_s, bits) = match s.kind {
            Kind::Numeric | Kind::SameFormat => (
                format!("{}", s.format.decode(code)),
                s.format.shortest_decimal(code),
                format!(
                    "{code:#0w$x}",
                    w = 2 + (s.format.bits() as usize).div_ceil(4)
                ),
                s.format.bits_str(code),
            ),
            Kind::Boolean => (
                (code == 1).to_string(),
                "-".into(),
                code.to_string(),
                "-".into(),
            ),
            Kind::Class => (
                CLASS_NAMES[code as usize].to_string(),
                "-".into(),
                code.to_string(),
                "-".into(),
            ),
        };
        let exact = match &s.written {
            Some(w) => w.clone(),
            None => s.exact.as_ref().map_or("-".to_string(), exact_text),
        };
        let what = happened(s.outcome.flags, s.kind == Kind::Numeric);
        json.push(serde_json::json!({
            "step": s.what, "format": s.format.name(), "exact": exact, "rounded": rounded,
            "shortest": shortest, "code": code, "bits": bits, "happened": what,
        }));
        t.row(vec![
            s.what.clone(),
            exact,
            rounded,
            shortest,
            code_s,
            bits,
            what,
        ]);
    }
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&json)?)?;
    } else {
        outln!("{}, {}:", prj.rounding.name(), prj.saturation)?;
        out!("{}", t.render())?;
    }
    Ok(ExitCode::SUCCESS)
}
