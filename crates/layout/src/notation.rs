//! CuTe notation: `((2,2),3):((1,4),8)` for layouts, `(2,(3,4))` for
//! IntTuples, `<2:1,4,_>` for tilers. Whitespace is ignored.

use std::str::FromStr;

use crate::error::{LayoutError, Result};
use crate::int_tuple::IntTuple;
use crate::layout::Layout;
use crate::tiler::Tiler;

/// A cursor over notation text that reports errors by column.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
}

/// Deepest nesting accepted, so that hostile text cannot exhaust the stack.
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
