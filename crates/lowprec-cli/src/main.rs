//! `lowprec`: bit-exact low-precision number formats from the command line.
//!
//! Every subcommand is a module of [`cmd`]; arguments are parsed by `clap` into a validated
//! configuration, and every error becomes one line on stderr and exit code 2.

#![forbid(unsafe_code)]

#[macro_use]
mod cmd;
mod png;
mod table;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Bit-exact low-precision number formats: round, encode, decode, inspect, verify, bench.
#[derive(Parser)]
#[command(
    name = "lowprec",
    version,
    about = "Bit-exact low-precision number formats: what FP8, FP6, FP4, BF16 and friends do to your numbers",
    after_help = "Examples:
  lowprec report
  lowprec report model.safetensors --scheme mxfp4 --scheme nvfp4 --scheme int4:group=128
  lowprec encode fp8-e4m3 0.3 448 500 --rounding rtz

Every command has its own examples: lowprec COMMAND --help. Schemes are described in
`lowprec quantize --help` and docs/schemes.md.

Formats are named as in `lowprec formats` (aliases such as float8_e4m3fn or bfloat16 work too),
or written as [u]e<E>m<M>[b<BIAS>][:ieee|fn|fnuz|none][:nozero], e.g. e4m3b7:fn or e3m4:ieee."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Memory budget for buffers sized by options such as --n, --rows, --m/--n/--k or
    /// --points (bytes, or with K/M/G/T; default half of this machine's memory): a request
    /// above it is refused before anything is allocated.
    #[arg(long, global = true, value_parser = cmd::parse_bytes)]
    max_memory: Option<u64>,
    /// Cap the instruction set the kernels use (default: the best this CPU has): for
    /// comparing paths, which give the same bits (`lowprec --simd avx2 verify -f fp16`).
    #[arg(long, global = true, value_enum)]
    simd: Option<Simd>,
}

/// An instruction-set level for `--simd`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Simd {
    /// The portable build (no vector extensions beyond the target's baseline).
    Portable,
    /// AVX2 + FMA (+ F16C for the binary16 casts).
    Avx2,
    /// AVX-512 (+ AVX-512 BF16 for the bfloat16 casts).
    Avx512,
}

#[derive(Subcommand)]
enum Command {
    /// What each scheme (FP8, MXFP4, NVFP4, INT4-g128, …) does to each tensor: the main job.
    Report(cmd::report::Args),
    /// Quantize a .npy array or a .safetensors model with a scheme; values, codes, scales out.
    Quantize(cmd::quantize::Args),
    /// Turn a .safetensors file written by `quantize` back into floats.
    Dequantize(cmd::dequantize::Args),
    /// Table of the named schemes (MX, NVFP4 conventions, 4over6, IF4, FP8 groups and tiles, …): bits, meaning, source.
    Schemes(cmd::schemes::Args),
    /// A short tour: the format table, then what rounding does to a few numbers.
    #[command(after_help = "Examples:\n  lowprec tour")]
    Tour,
    /// Table of every preset format: bits, layout, bias, range, epsilon, specials.
    Formats(cmd::formats::Args),
    /// Properties of one format and, for formats of at most 8 bits, every code.
    Info(cmd::info::Args),
    /// Round numbers into a format: value, code, bits, neighbours, relative error.
    Encode(cmd::encode::Args),
    /// Decode codes (given as numbers, or a .npy file of unsigned integers) into values.
    Decode(cmd::decode::Args),
    /// Round a float32/float64 .npy array into a format; write values or codes.
    Round(cmd::round::Args),
    /// Evaluate an expression of literals and operations, each step rounded once: exact value, rounded value, code, bits.
    Calc(cmd::calc::Args),
    /// An operation (Add, FMA, Sqrt, Compare…, P3109 and IEEE 754) over .npy arrays, each element rounded once.
    Op(cmd::op::Args),
    /// P3109 block operations: BlockDotProduct, BlockReduceAdd, ConvertToBlock(MaxAbsFinite), ConvertFromBlock, κ of an accumulator.
    Block(cmd::block::Args),
    /// The full table of an operation on an 8-bit format (65,536 pairs) as CSV, and an SVG heat map.
    Table(cmd::table_op::Args),
    /// IEEE P3109: the draft's minimum conformance set checked against the exact reference.
    P3109(cmd::p3109::Args),
    /// Check the fast kernels against the exact reference on every binary32 bit pattern.
    Verify(cmd::verify::Args),
    /// Sum rows in a low-precision accumulator (sequential, pairwise, Kahan, promotion): error table.
    Accumulate(cmd::accumulate::Args),
    /// Simulate C = A·B with low-precision inputs, products and accumulator: error table.
    Gemm(cmd::gemm::Args),
    /// Draw the error of accumulation as the number of terms grows (SVG).
    Plot(cmd::plot::Args),
    /// Measure rounding and encoding speed (elements/s) beside the memory limit (streaming probes) and the half crate.
    Bench(cmd::bench::Args),
    /// Range-safe binary32 end to end: the NLS soliton in binary64, binary32 by the rules, naive binary32.
    Soliton(cmd::soliton::Args),
}

/// A command line clap refused: help and version as clap prints them; every error as one
/// line (clap's first, which names the argument and the value, and our parser's reason) and
/// exit code 2, as every other error.
fn clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(if e.use_stderr() { 2 } else { 0 })
        }
        _ => {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid command line");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            errln!("lowprec: error: {first} (see lowprec --help)");
            ExitCode::from(2)
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    cmd::set_memory_budget(cli.max_memory);
    // Ctrl-C: no output is left half-written (committed outputs stay), exit code 130
    let _ = ctrlc::set_handler(|| {
        lowprec::io::remove_uncommitted();
        std::process::exit(130);
    });
    if let Some(level) = cli.simd {
        lowprec::simd::set_max_level(match level {
            Simd::Portable => lowprec::simd::Level::Portable,
            Simd::Avx2 => lowprec::simd::Level::Avx2,
            Simd::Avx512 => lowprec::simd::Level::Avx512,
        });
    }
    let result = match cli.command {
        Command::Report(a) => cmd::report::run(&a),
        Command::Quantize(a) => cmd::quantize::run(&a),
        Command::Dequantize(a) => cmd::dequantize::run(&a),
        Command::Schemes(a) => cmd::schemes::run(&a),
        Command::Tour => cmd::tour::run(),
        Command::Formats(a) => cmd::formats::run(&a),
        Command::Info(a) => cmd::info::run(&a),
        Command::Encode(a) => cmd::encode::run(&a),
        Command::Decode(a) => cmd::decode::run(&a),
        Command::Round(a) => cmd::round::run(&a),
        Command::Verify(a) => cmd::verify::run(&a),
        Command::Calc(a) => cmd::calc::run(&a),
        Command::Op(a) => cmd::op::run(&a),
        Command::Block(a) => cmd::block::run(&a),
        Command::Table(a) => cmd::table_op::run(&a),
        Command::P3109(a) => cmd::p3109::run(&a),
        Command::Accumulate(a) => cmd::accumulate::run(&a),
        Command::Gemm(a) => cmd::gemm::run(&a),
        Command::Plot(a) => cmd::plot::run(&a),
        Command::Bench(a) => cmd::bench::run(&a),
        Command::Soliton(a) => cmd::soliton::run(&a),
    };
    // what is still buffered goes out now, so that its error is handled like the others
    let result = result.and_then(|code| cmd::flush_stdout().map(|()| code));
    match result {
        Ok(code) => code,
        Err(e) => {
            let stdout = e.chain().find_map(|c| c.downcast_ref::<cmd::StdoutError>());
            if stdout.is_some_and(|s| s.0.kind() == std::io::ErrorKind::BrokenPipe) {
                // the reader closed the pipe (`lowprec … | head`): it has what it wanted
                return ExitCode::SUCCESS;
            }
            errln!("lowprec: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
