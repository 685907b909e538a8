//! The block grid of a tensor: how a [`Blocks`] shape cuts a tensor of a given shape into
//! blocks, how many scales there are, and where each one's elements lie.
//!
//! The tensor is seen as `mats` matrices of `rows × cols` (its last two axes; a rank-1
//! tensor is one row, a rank-0 tensor one element). A tile `r × c` covers rows `[r·i, r·i + r)`
//! and columns `[c·j, c·j + c)` of one matrix; groups and channels are tiles one row high,
//! for which the leading axes merge into rows. Scales are stored in row-major order of the
//! grid `(leading axes…, ⌈rows / r⌉, ⌈cols / c⌉)`. A partial tile at an edge is refused
//! unless the scheme pads, in which case it holds only the elements that exist.

use super::axes::Blocks;
use crate::error::{Error, Result};

/// The block grid of one tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// Elements.
    pub n: usize,
    /// Matrices (the product of the axes before the last two, for tiles more than one row
    /// high; else 1).
    pub mats: usize,
    /// Rows per matrix.
    pub rows: usize,
    /// Columns (the last axis).
    pub cols: usize,
    /// The tile `(r, c)`; `None` for one scale over the whole tensor.
    pub tile: Option<(usize, usize)>,
}

impl Grid {
    /// The grid of `blocks` over a tensor of `shape`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an empty tile, or, without `pad`, a tile that does not
    /// divide the axes it covers (the message names the axis and what would work).
    pub fn new(shape: &[usize], blocks: Blocks, pad: bool) -> Result<Grid> {
        let n: usize = shape.iter().product();
        let cols = shape.last().copied().unwrap_or(1);
        let tile = blocks.tile(cols);
        let (mats, rows) = match (tile, shape.len()) {
            (Some((r, _)), k) if r > 1 && k >= 2 => (shape[..k - 2].iter().product(), shape[k - 2]),
            _ => (1, n.checked_div(cols).unwrap_or(0)),
        };
        if let Some((r, c)) = tile {
            if r == 0 || c == 0 {
                return Err(Error::InvalidArgument(format!(
                    "the block shape {blocks} is empty; give positive sizes"
                )));
            }
            if !pad {
                if cols % c != 0 {
                    return Err(Error::InvalidArgument(format!(
                        "the last axis ({cols}) is not a multiple of the block size {c}; \
                         choose a size that divides it, or ask for zero padding (:pad)"
                    )));
                }
                if r > 1 && rows % r != 0 {
                    return Err(Error::InvalidArgument(format!(
                        "the tile {r}x{c} does not divide the tensor's rows ({rows}, the \
                         second-to-last axis{}); use a tile that divides it, or ask for \
                         zero padding (:pad)",
                        if shape.len() < 2 {
                            ": a 1-D tensor is one row"
                        } else {
                            ""
                        }
                    )));
                }
            }
        }
        Ok(Grid {
            n,
            mats,
            rows,
            cols,
            tile,
        })
    }

    /// Block rows per matrix.
    pub fn block_rows(&self) -> usize {
        self.tile.map_or(1, |(r, _)| self.rows.div_ceil(r))
    }

    /// Block columns.
    pub fn block_cols(&self) -> usize {
        self.tile.map_or(1, |(_, c)| self.cols.div_ceil(c))
    }

    /// The number of scales.
    pub fn blocks(&self) -> usize {
        match self.tile {
            None => 1,
            Some(_) => self.mats * self.block_rows() * self.block_cols(),
        }
    }

    /// The shape of the scale array for a tensor of `shape`: the shape with its last axis
    /// (and, for tiles, its second-to-last) divided by the tile, rounded up; `[1]` for one
    /// scale per tensor.
    pub fn scale_shape(&self, shape: &[usize]) -> Vec<usize> {
        match self.tile {
            None => vec![1],
            Some((r, _)) => {
                let mut s = shape.to_vec();
                if s.is_empty() {
                    return vec![1];
                }
                let k = s.len();
                s[k - 1] = self.block_cols();
                if r > 1 && k >= 2 {
                    s[k - 2] = self.block_rows();
                }
                s
            }
        }
    }

    /// The index of the scale of element `i` (in C order).
    pub fn block_of(&self, i: usize) -> usize {
        match self.tile {
            None => 0,
            Some((r, c)) => {
                let (row, col) = (i / self.cols, i % self.cols);
                let (m, rr) = (row / self.rows.max(1), row % self.rows.max(1));
                (m * self.block_rows() + rr / r) * self.block_cols() + col / c
            }
        }
    }

    /// Elements of the tile whose scale is `k`.
    pub fn block_len(&self, k: usize) -> usize {
        match self.tile {
            None => self.n,
            Some((r, c)) => {
                let (bc, br) = (self.block_cols(), self.block_rows());
                let (i, j) = ((k / bc) % br, k % bc);
                let h = r.min(self.rows - i * r);
                let w = c.min(self.cols - j * c);
                h * w
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_cover_the_last_two_axes_and_groups_the_last() {
        let g = Grid::new(&[2, 4, 6], Blocks::Tile(2, 3), false).unwrap();
        assert_eq!((g.mats, g.rows, g.cols, g.blocks()), (2, 4, 6, 8));
        assert_eq!(g.scale_shape(&[2, 4, 6]), [2, 2, 2]);
        // element (m=1, row=3, col=4): block (1, 1, 1)
        assert_eq!(g.block_of(24 + 3 * 6 + 4), (2 + 1) * 2 + 1);
        let g = Grid::new(&[2, 4, 6], Blocks::Group(3), false).unwrap();
        assert_eq!((g.mats, g.rows, g.blocks()), (1, 8, 16));
        assert_eq!(g.scale_shape(&[2, 4, 6]), [2, 4, 2]);
        assert_eq!(g.block_of(7), 2);
        assert!(Grid::new(&[4, 6], Blocks::Group(4), false).is_err());
        assert!(Grid::new(&[5, 6], Blocks::Tile(2, 3), false).is_err());
        let p = Grid::new(&[5, 6], Blocks::Tile(2, 4), true).unwrap();
        assert_eq!((p.block_rows(), p.block_cols(), p.blocks()), (3, 2, 6));
        // the last tile: one row, two columns
        assert_eq!(p.block_len(5), 2);
        assert_eq!((0..6).map(|k| p.block_len(k)).sum::<usize>(), 30);
        let t = Grid::new(&[5, 6], Blocks::Tensor, false).unwrap();
        assert_eq!((t.blocks(), t.scale_shape(&[5, 6])), (1, vec![1]));
        // a 1-D tensor is one row
        assert!(Grid::new(&[32], Blocks::Tile(16, 16), false).is_err());
        assert_eq!(
            Grid::new(&[32], Blocks::Group(16), false).unwrap().blocks(),
            2
        );
    }
}
