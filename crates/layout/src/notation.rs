//! CuTe notation: `((2,2),3):((1,4),8)` for layouts, `(2,(3,4))` for
//! IntTuples, `<2:1,4,_>` for tilers, `Sw<3,4,3>` for swizzles and
//! `Sw<3,4,3> o (8,64):(64,1)` (or `Sw<3,4,3> o 16 o L`, with an offset)
//! for swizzled layouts. Whitespace is ignored.

use std::str::FromStr;

use crate::error::{LayoutError, Result};
use crate::int_tuple::IntTuple;
use crate::layout::Layout;
use crate::swizzle::{ComposedLayout, Swizzle};
use crate::tiler::Tiler;

/// A cursor over notation text that reports errors by column.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
}

/// Deepest nesting accepted, so that hostile text cannot exhaust the stack.
///
/// ```
/// use retile_layout::{IntTuple, MAX_NESTING};
/// let nested = |depth: usize| format!("{}1{}", "(".repeat(depth), ")".repeat(depth));
/// assert!(nested(MAX_NESTING).parse::<IntTuple>().is_ok());
/// let err = nested(MAX_NESTING + 1).parse::<IntTuple>().unwrap_err();
/// assert!(err.to_string().contains("nesting deeper than 64 levels"), "{err}");
/// ```
pub const MAX_NESTING: usize = 64;

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Self {
        Cursor {
            bytes: text.as_bytes(),
            pos: 0,
            depth: 0,
        }
    }

    fn error(&self, message: impl Into<String>) -> LayoutError {
        LayoutError::Parse {
            column: self.pos + 1,
            message: message.into(),
        }
    }

    fn skip_space(&mut self) {
        while self
            .bytes
            .get(self.pos)
            .is_some_and(u8::is_ascii_whitespace)
        {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.found(&format!("'{}'", c as char)))
        }
    }

    fn found(&mut self, wanted: &str) -> LayoutError {
        match self.peek() {
            Some(c) => self.error(format!("expected {wanted}, found '{}'", c as char)),
            None => self.error(format!("expected {wanted}, found the end of the text")),
        }
    }

    fn finish(&mut self) -> Result<()> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.found("the end of the text")),
        }
    }

    fn integer(&mut self) -> Result<i64> {
        self.skip_space();
        let start = self.pos;
        if self.bytes.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        let digits = self.pos;
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        if self.pos == digits {
            self.pos = start;
            return Err(self.found("an integer"));
        }
        let text = std::str::from_utf8(&self.bytes[start..self.pos]).unwrap_or("");
        text.parse().map_err(|_| LayoutError::Parse {
            column: start + 1,
            message: format!("integer {text} does not fit in 64 bits"),
        })
    }

    fn nest(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.error(format!("nesting deeper than {MAX_NESTING} levels")));
        }
        Ok(())
    }

    fn int_tuple(&mut self) -> Result<IntTuple> {
        if !self.eat(b'(') {
            return self.integer().map(IntTuple::Int);
        }
        self.nest()?;
        let mut items = vec![self.int_tuple()?];
        while self.eat(b',') {
            items.push(self.int_tuple()?);
        }
        self.expect(b')')?;
        self.depth -= 1;
        Ok(IntTuple::Tuple(items))
    }

    /// `S:D`, or a bare shape `S` (compact column-major).
    fn layout(&mut self) -> Result<Layout> {
        let start = self.pos;
        let shape = self.int_tuple()?;
        let layout = if self.eat(b':') {
            Layout::new(shape, self.int_tuple()?)
        } else {
            Layout::from_shape(shape)
        };
        layout.map_err(|e| LayoutError::Parse {
            column: start + 1,
            message: e.to_string(),
        })
    }

    /// `Sw<B,M,S>`.
    fn swizzle(&mut self) -> Result<Swizzle> {
        self.skip_space();
        let start = self.pos;
        if !self.bytes[self.pos..].starts_with(b"Sw") {
            return Err(self.found("a swizzle 'Sw<B,M,S>'"));
        }
        self.pos += 2;
        self.expect(b'<')?;
        let bits = self.integer()?;
        self.expect(b',')?;
        let base = self.integer()?;
        self.expect(b',')?;
        let shift = self.integer()?;
        self.expect(b'>')?;
        Swizzle::new(bits, base, shift).map_err(|e| LayoutError::Parse {
            column: start + 1,
            message: e.to_string(),
        })
    }

    /// `Sw<B,M,S> o L` or `Sw<B,M,S> o N o L` (`N` an integer, or C++'s
    /// static `_N`), or a plain layout `L` (no swizzle).
    fn composed(&mut self) -> Result<ComposedLayout> {
        if self.peek() != Some(b'S') {
            return Ok(ComposedLayout::from(self.layout()?));
        }
        let swizzle = self.swizzle()?;
        if !self.eat(b'o') {
            return Err(self.found("'o' (composition) after the swizzle"));
        }
        let before = self.pos;
        let offset = match self.offset_then_o() {
            Some(offset) => offset,
            None => {
                self.pos = before;
                0
            }
        };
        Ok(ComposedLayout::new(swizzle, offset, self.layout()?))
    }

    /// An offset followed by `o`, if that is what comes next.
    fn offset_then_o(&mut self) -> Option<i64> {
        self.eat(b'_');
        let offset = self.integer().ok()?;
        self.eat(b'o').then_some(offset)
    }

    fn tiler(&mut self) -> Result<Tiler> {
        match self.peek() {
            Some(b'_') => {
                self.pos += 1;
                Ok(Tiler::Underscore)
            }
            Some(b'<') => {
                self.pos += 1;
                self.nest()?;
                let mut items = vec![self.tiler()?];
                while self.eat(b',') {
                    items.push(self.tiler()?);
                }
                self.expect(b'>')?;
                self.depth -= 1;
                Ok(Tiler::Modes(items))
            }
            _ => self.tiler_operand(),
        }
    }

    /// A layout, or a shape standing for a by-mode tiler.
    fn tiler_operand(&mut self) -> Result<Tiler> {
        let start = self.pos;
        let shape = self.int_tuple()?;
        let tiler = if self.eat(b':') {
            Layout::new(shape, self.int_tuple()?).map(Tiler::Layout)
        } else {
            Tiler::from_shape(&shape)
        };
        tiler.map_err(|e| LayoutError::Parse {
            column: start + 1,
            message: e.to_string(),
        })
    }
}

fn parse_all<'a, T>(text: &'a str, f: impl FnOnce(&mut Cursor<'a>) -> Result<T>) -> Result<T> {
    let mut cursor = Cursor::new(text);
    let value = f(&mut cursor)?;
    cursor.finish()?;
    Ok(value)
}

impl FromStr for IntTuple {
    type Err = LayoutError;

    /// ```
    /// use retile_layout::IntTuple;
    /// assert_eq!("( 1 ,(2,-3))".parse::<IntTuple>().unwrap().to_string(), "(1,(2,-3))");
    /// assert!("(1,".parse::<IntTuple>().is_err());
    /// ```
    fn from_str(text: &str) -> Result<Self> {
        parse_all(text, Cursor::int_tuple)
    }
}

impl FromStr for Layout {
    type Err = LayoutError;

    /// ```
    /// use retile_layout::Layout;
    /// assert_eq!("(2,3)".parse::<Layout>().unwrap().to_string(), "(2,3):(1,2)");
    /// let err = "(2,3):(1)".parse::<Layout>().unwrap_err();
    /// assert!(err.to_string().contains("column 1"));
    /// ```
    fn from_str(text: &str) -> Result<Self> {
        parse_all(text, Cursor::layout)
    }
}

impl FromStr for Tiler {
    type Err = LayoutError;

    /// ```
    /// use retile_layout::Tiler;
    /// assert_eq!("<(2,2):(1,8), _>".parse::<Tiler>().unwrap().to_string(), "<(2,2):(1,8),_>");
    /// ```
    fn from_str(text: &str) -> Result<Self> {
        parse_all(text, Cursor::tiler)
    }
}

impl FromStr for Swizzle {
    type Err = LayoutError;

    /// ```
    /// use retile_layout::Swizzle;
    /// assert_eq!("Sw< 3, 4, -3 >".parse::<Swizzle>().unwrap(), Swizzle::new(3, 4, -3).unwrap());
    /// assert!("Sw<3,4,2>".parse::<Swizzle>().is_err());
    /// ```
    fn from_str(text: &str) -> Result<Self> {
        parse_all(text, Cursor::swizzle)
    }
}

impl FromStr for ComposedLayout {
    type Err = LayoutError;

    /// ```
    /// use retile_layout::ComposedLayout;
    /// let c: ComposedLayout = "Sw<3,4,3> o _0 o (8,64):(64,1)".parse().unwrap();
    /// assert_eq!(c.to_string(), "Sw<3,4,3> o (8,64):(64,1)");
    /// assert_eq!("Sw<1,0,1> o 4 o 4:1".parse::<ComposedLayout>().unwrap().offset(), 4);
    /// assert_eq!("Sw<1,0,1> o 4".parse::<ComposedLayout>().unwrap().to_string(), "Sw<1,0,1> o 4:1");
    /// assert!("Sw<1,0,1> (4,4)".parse::<ComposedLayout>().is_err());
    /// assert!("(4,4):(4,1)".parse::<ComposedLayout>().unwrap().is_plain());
    /// ```
    fn from_str(text: &str) -> Result<Self> {
        parse_all(text, Cursor::composed)
    }
}
