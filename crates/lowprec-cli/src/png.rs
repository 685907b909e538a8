//! A small, dependency-free PNG encoder (ISO/IEC 15948, RFC 2083) for the heat maps of
//! `lowprec table --plot FILE.png`: 8-bit RGB (colour type 2), no interlace, filter type 0
//! (`None`) on every scanline, and the pixel data in a zlib stream (RFC 1950) of stored,
//! that is uncompressed, deflate blocks (RFC 1951 §3.2.4).
//!
//! A file is the 8-byte signature and the chunks `IHDR`, `IDAT`, `IEND`; each chunk is
//! `length (u32 BE) ‖ type (4 ASCII bytes) ‖ data ‖ CRC-32(type ‖ data) (u32 BE)`.

/// The eight bytes every PNG file starts with: `\x89 P N G \r \n \x1a \n`.
pub const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

/// The largest payload of one stored deflate block: its length field `LEN` is a u16.
pub const MAX_STORED: usize = 65_535;

/// The reflected CRC-32 polynomial of ISO 3309 / ITU-T V.42 (the one of PNG, zlib, gzip,
/// Ethernet): x³² + x²⁶ + x²³ + x²² + x¹⁶ + x¹² + x¹¹ + x¹⁰ + x⁸ + x⁷ + x⁵ + x⁴ + x² + x + 1,
/// 0x04C11DB7 with its bits in reverse order.
pub const CRC_POLY: u32 = 0xEDB8_8320;

/// The Adler-32 modulus: the largest prime below 2¹⁶.
pub const ADLER_MOD: u32 = 65_521;

/// `CRC_TABLE[n]` is the CRC register after shifting the byte `n` through it eight times,
/// least significant bit first: `c ← (c >> 1) ^ (CRC_POLY if c & 1 else 0)`, starting at
/// `c = n` (computed at compile time).
pub const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut n = 0;
    while n < 256 {
        let mut c = n as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                CRC_POLY ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[n] = c;
        n += 1;
    }
    table
};

/// Continue a CRC-32 over `bytes`: `crc` is a previous [`crc32_update`] result (start from
/// 0). Inside, the register is `!crc` and each byte `b` steps it as
/// `c ← CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)`; the result is the register complemented.
pub fn crc32_update(crc: u32, bytes: &[u8]) -> u32 {
    let mut c = !crc;
    for &b in bytes {
        c = CRC_TABLE[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8);
    }
    !c
}

/// The CRC-32 of `bytes` (polynomial [`CRC_POLY`], reflected, initial value and final XOR
/// 0xFFFFFFFF): `crc32(b"123456789") == 0xCBF43926`.
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32_update(0, bytes)
}

/// The Adler-32 checksum of `bytes` (RFC 1950 §8.2): with `A = 1 + Σ bᵢ` and
/// `B = Σ Aᵢ` (the running values of `A` after each byte), both mod [`ADLER_MOD`],
/// it is `B·65536 + A`; `adler32(b"Wikipedia") == 0x11E60398`.
pub fn adler32(bytes: &[u8]) -> u32 {
    // 5552 bytes is the most that can be summed before B may pass 2³² (zlib's NMAX)
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in bytes.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            b += a;
        }
        a %= ADLER_MOD;
        b %= ADLER_MOD;
    }
    (b << 16) | a
}

/// `data` as a zlib stream of stored deflate blocks: the header `0x78 0x01` (deflate, 32 KiB
/// window, no dictionary, `(0x78·256 + 0x01) mod 31 = 0`), then blocks of at most
/// [`MAX_STORED`] bytes, each `BFINAL|BTYPE=00` (one byte: 1 on the last block, else 0),
/// `LEN` and `NLEN = !LEN` (u16 LE) and the bytes, then [`adler32`] of `data` (u32 BE).
/// Empty `data` is one empty final block.
pub fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let blocks = data.len().div_ceil(MAX_STORED).max(1);
    let mut z = Vec::with_capacity(data.len() + 5 * blocks + 6);
    z.extend_from_slice(&[0x78, 0x01]);
    let mut chunks = data.chunks(MAX_STORED).peekable();
    if chunks.peek().is_none() {
        z.extend_from_slice(&[1, 0, 0, 0xFF, 0xFF]);
    }
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        let len = chunk.len() as u16;
        z.push(u8::from(last));
        z.extend_from_slice(&len.to_le_bytes());
        z.extend_from_slice(&(!len).to_le_bytes());
        z.extend_from_slice(chunk);
    }
    z.extend_from_slice(&adler32(data).to_be_bytes());
    z
}

/// Append one chunk to `out`: `len(data)` (u32 BE), `kind`, `data`, and the [`crc32`] of
/// `kind ‖ data` (u32 BE).
fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    let len = u32::try_from(data.len()).expect("a PNG chunk holds less than 2³¹ bytes");
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    out.extend_from_slice(&crc32_update(crc32(kind), data).to_be_bytes());
}

/// An 8-bit RGB image, row-major from the top-left pixel, 3 bytes a pixel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Pixels per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// `width · height · 3` bytes: R, G, B of each pixel.
    pub rgb: Vec<u8>,
}

impl Image {
    /// A `width × height` image filled with `colour`.
    pub fn new(width: usize, height: usize, colour: [u8; 3]) -> Self {
        Image {
            width,
            height,
            rgb: colour.repeat(width * height),
        }
    }

    /// Paint the rectangle of `w × h` pixels whose top-left pixel is `(x, y)` (clipped to
    /// the image).
    pub fn fill(&mut self, x: usize, y: usize, w: usize, h: usize, colour: [u8; 3]) {
        let (x1, y1) = ((x + w).min(self.width), (y + h).min(self.height));
        for row in y.min(y1)..y1 {
            let start = (row * self.width + x.min(x1)) * 3;
            let end = (row * self.width + x1) * 3;
            for px in self.rgb[start..end].chunks_exact_mut(3) {
                px.copy_from_slice(&colour);
            }
        }
    }

    /// The PNG file of this image: [`SIGNATURE`]; `IHDR` (width, height as u32 BE, bit depth
    /// 8, colour type 2 = RGB, compression 0, filter method 0, interlace 0); one `IDAT`
    /// holding [`zlib_stored`] of the scanlines, each a filter byte 0 then its `3·width`
    /// bytes; an empty `IEND`.
    ///
    /// # Panics
    ///
    /// When a side is 0 or above 2³¹ − 1 (PNG's limit), or `rgb` is not `3·width·height`
    /// bytes.
    pub fn encode(&self) -> Vec<u8> {
        let side = |n: usize| {
            u32::try_from(n)
                .ok()
                .filter(|&v| (1..=0x7FFF_FFFF).contains(&v))
                .expect("a PNG side is 1 to 2³¹ − 1 pixels")
        };
        let (w, h) = (side(self.width), side(self.height));
        let stride = 3 * self.width;
        assert_eq!(
            self.rgb.len(),
            stride * self.height,
            "RGB bytes of the image"
        );
        let mut raw = Vec::with_capacity((stride + 1) * self.height);
        for row in self.rgb.chunks_exact(stride) {
            raw.push(0);
            raw.extend_from_slice(row);
        }
        let z = zlib_stored(&raw);
        let mut ihdr = Vec::with_capacity(13);
        ihdr.extend_from_slice(&w.to_be_bytes());
        ihdr.extend_from_slice(&h.to_be_bytes());
        ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
        let mut out = Vec::with_capacity(z.len() + 64);
        out.extend_from_slice(&SIGNATURE);
        chunk(&mut out, b"IHDR", &ihdr);
        chunk(&mut out, b"IDAT", &z);
        chunk(&mut out, b"IEND", &[]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_values() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32_update(crc32(b"1234"), b"56789"), 0xCBF4_3926);
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        assert_eq!(adler32(b""), 1);
        // 0xFF bytes past zlib's NMAX (5552): the deferred modulo must not overflow; the
        // direct definition, reduced on every byte, gives the same
        let ff = vec![0xFFu8; 100_000];
        let (mut a, mut b) = (1u32, 0u32);
        for &x in &ff {
            a = (a + u32::from(x)) % ADLER_MOD;
            b = (b + a) % ADLER_MOD;
        }
        assert_eq!(adler32(&ff), (b << 16) | a);
    }

    /// Read a zlib stream of stored deflate blocks (what [`zlib_stored`] writes, nothing
    /// else): check the header, each `NLEN`, the final flag and the Adler-32 trailer.
    fn read_stored(z: &[u8]) -> Vec<u8> {
        assert_eq!(u16::from_be_bytes([z[0], z[1]]) % 31, 0, "FCHECK");
        assert_eq!(z[0] & 0x0F, 8, "CM = deflate");
        assert_eq!(z[1] & 0x20, 0, "no preset dictionary");
        let (mut at, mut out) = (2, Vec::new());
        loop {
            let head = z[at];
            assert_eq!((head >> 1) & 3, 0, "BTYPE = stored");
            let len = u16::from_le_bytes([z[at + 1], z[at + 2]]);
            let nlen = u16::from_le_bytes([z[at + 3], z[at + 4]]);
            assert_eq!(nlen, !len, "NLEN");
            at += 5;
            out.extend_from_slice(&z[at..at + len as usize]);
            at += len as usize;
            if head & 1 == 1 {
                break;
            }
        }
        let trailer = u32::from_be_bytes(z[at..at + 4].try_into().unwrap());
        assert_eq!(trailer, adler32(&out), "Adler-32 trailer");
        assert_eq!(at + 4, z.len(), "nothing after the trailer");
        out
    }

    #[test]
    fn stored_blocks_round_trip() {
        for n in [
            0,
            1,
            MAX_STORED - 1,
            MAX_STORED,
            MAX_STORED + 1,
            3 * MAX_STORED + 7,
        ] {
            let data: Vec<u8> = (0..n).map(|i| (i * 31 + i / 7) as u8).collect();
            let z = zlib_stored(&data);
            assert_eq!(read_stored(&z), data, "{n} bytes");
            assert_eq!(z.len(), 2 + 5 * n.div_ceil(MAX_STORED).max(1) + n + 4);
        }
    }

    /// The chunks of a PNG file, `(type, data)`, every CRC checked.
    fn chunks(png: &[u8]) -> Vec<([u8; 4], Vec<u8>)> {
        assert_eq!(png[..8], SIGNATURE);
        let (mut at, mut out) = (8, Vec::new());
        while at < png.len() {
            let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
            let kind: [u8; 4] = png[at + 4..at + 8].try_into().unwrap();
            let data = png[at + 8..at + 8 + len].to_vec();
            let crc = u32::from_be_bytes(png[at + 8 + len..at + 12 + len].try_into().unwrap());
            assert_eq!(crc, crc32(&png[at + 4..at + 8 + len]), "CRC of {kind:?}");
            out.push((kind, data));
            at += 12 + len;
        }
        out
    }

    #[test]
    fn encode_gives_back_the_pixels() {
        // 131 × 173 RGB: 393 bytes a row, 68,162 bytes of scanlines, so two stored blocks
        let (w, h) = (131, 173);
        let mut img = Image::new(w, h, [255, 255, 255]);
        img.fill(3, 5, 10, 20, [12, 34, 56]);
        img.fill(w - 2, h - 2, 10, 10, [1, 2, 3]); // clipped to the corner
        for (i, px) in img.rgb.chunks_exact_mut(3).enumerate().step_by(7) {
            px.copy_from_slice(&[(i % 251) as u8, (i / 251) as u8, (i * 7) as u8]);
        }
        assert_eq!(img.rgb[(6 * w + 4) * 3..][..3], [12, 34, 56]); // not one of the 7th pixels
        assert_eq!(img.rgb[(4 * w + 4) * 3..][..3], [255, 255, 255]);
        assert_eq!(img.rgb[(h * w - 1) * 3..], [1, 2, 3]);
        let png = img.encode();
        let cs = chunks(&png);
        let kinds: Vec<&[u8; 4]> = cs.iter().map(|(k, _)| k).collect();
        assert_eq!(kinds, [b"IHDR", b"IDAT", b"IEND"]);
        let ihdr = &cs[0].1;
        assert_eq!(ihdr.len(), 13);
        assert_eq!(u32::from_be_bytes(ihdr[0..4].try_into().unwrap()), w as u32);
        assert_eq!(u32::from_be_bytes(ihdr[4..8].try_into().unwrap()), h as u32);
        assert_eq!(ihdr[8..], [8, 2, 0, 0, 0]);
        assert!(cs[2].1.is_empty());
        let raw = read_stored(&cs[1].1);
        assert_eq!(raw.len(), (3 * w + 1) * h);
        let mut pixels = Vec::new();
        for line in raw.chunks_exact(3 * w + 1) {
            assert_eq!(line[0], 0, "filter type None");
            pixels.extend_from_slice(&line[1..]);
        }
        assert_eq!(pixels, img.rgb);
    }
}
