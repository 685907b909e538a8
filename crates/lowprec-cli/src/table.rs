//! Aligned text tables.

/// A table: a header row and rows of cells, printed with columns aligned (numbers to the
/// right, text to the left).
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with this header.
    pub fn new(header: &[&str]) -> Self {
        Table {
            rows: vec![header.iter().map(|s| s.to_string()).collect()],
        }
    }

    /// Append a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as text, one line per row.
    pub fn render(&self) -> String {
        let n = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let width: Vec<usize> = (0..n)
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let numeric = |s: &str| {
            s.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+') && !s.contains(' ')
        };
        let mut out = String::new();
        for (i, r) in self.rows.iter().enumerate() {
            let line: Vec<String> = r
                .iter()
                .enumerate()
                .map(|(c, s)| {
                    if i > 0 && numeric(s) {
                        format!("{s:>w$}", w = width[c])
                    } else {
                        format!("{s:<w$}", w = width[c])
                    }
                })
                .collect();
            out.push_str(line.join("  ").trim_end());
            out.push('\n');
        }
        out
    }
}

/// A value in the shortest form that reads back exactly (Rust's `{}` for `f64`), using
/// exponent notation for very large or small magnitudes.
pub fn num(v: f64) -> String {
    if v == 0.0 || v.is_nan() || v.is_infinite() {
        return format!("{v}");
    }
    let a = v.abs();
    if (1e-4..1e7).contains(&a) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// `2^k` written as a power when the value is one, else [`num`].
pub fn pow_or_num(v: f64) -> String {
    if v > 0.0 && v.is_finite() {
        let e = v.log2();
        if e == e.round() && !(-4.0..=16.0).contains(&e) {
            return format!("2^{}", e as i64);
        }
    }
    num(v)
}
