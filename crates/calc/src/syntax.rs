//! Tokens and the parser: text to an expression tree.
//!
//! Grammar (whitespace is free):
//!
//! ```text
//! expr    := compose ('==' compose)?
//! compose := product ('o' product)*
//! product := layout (('*' | '/') layout)*
//! layout  := postfix (':' postfix)?
//! postfix := primary ('.' NAME '(' args ')')*
//! primary := INT | '-' INT | '(' expr (',' expr)* ')' | '[' (expr (',' expr)*)? ']'
//!          | '<' expr (',' expr)* '>' | '_' | 'Sw' '<' expr ',' expr ',' expr '>'
//!          | NAME ('(' args ')')?
//! args    := (arg (',' arg)*)?      arg := NAME '=' expr | expr
//! ```
//!
//! Two limits keep hostile text from exhausting memory or the stack: an
//! expression has at most [`MAX_LEN`] bytes, and brackets and calls nest at
//! most [`MAX_DEPTH`] levels deep. Chains of operators (`a * b / c ...`,
//! `a o b o c ...`) and
//! of method calls (`a.f(..).g(..) ...`) are kept flat, as lists, and are
//! evaluated in a loop: their length is limited only by `MAX_LEN`, and no
//! part of the library recurses once per link.

use crate::error::CalcError;

/// Deepest nesting of brackets and calls accepted (`f(g(x))` is 2 levels,
/// `((1,2),3)` is 2); operator and method chains add no levels.
///
/// ```
/// use retile_calc::{parse, MAX_DEPTH};
/// let nested = |depth: usize| format!("{}1{}", "(".repeat(depth), ")".repeat(depth));
/// assert!(parse(&nested(MAX_DEPTH - 1)).is_ok());
/// let err = parse(&nested(MAX_DEPTH + 1)).unwrap_err();
/// assert!(err.message().contains("nested deeper than 64 levels"), "{err}");
/// // a long chain adds no levels
/// assert!(parse(&vec!["2"; 1000].join(" * ")).is_ok());
/// ```
pub const MAX_DEPTH: usize = 64;

/// Longest expression accepted, in bytes (1 MiB).
///
/// ```
/// use retile_calc::{parse, MAX_LEN};
/// assert_eq!(MAX_LEN, 1 << 20);
/// let padded = format!("{}8", " ".repeat(MAX_LEN - 1));
/// assert!(parse(&padded).is_ok());
/// let err = parse(&format!(" {padded}")).unwrap_err();
/// assert!(err.message().contains("more than the limit of 1048576 bytes"), "{err}");
/// ```
pub const MAX_LEN: usize = 1 << 20;

/// An expression, with the 1-based column where it starts.
///
/// ```
/// use retile_calc::{eval, parse, ExprKind};
/// let e = parse("  size(8:1)")?;
/// assert_eq!(e.column, 3);
/// assert!(matches!(&e.kind, ExprKind::Call { name, args, .. } if name == "size" && args.len() == 1));
/// assert_eq!(eval(&e)?.to_string(), "8");
/// # Ok::<(), retile_calc::CalcError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where it starts.
    pub column: usize,
}

/// The forms of expression.
///
/// ```
/// use retile_calc::{parse, ExprKind};
/// let ExprKind::Tuple(items) = parse("(1, _, float16)")?.kind else { panic!() };
/// assert_eq!(items[0].kind, ExprKind::Int(1));
/// assert_eq!(items[1].kind, ExprKind::Underscore);
/// assert_eq!(items[2].kind, ExprKind::Name("float16".into()));
/// assert_eq!(items[2].column, 8);
/// # Ok::<(), retile_calc::CalcError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    /// An integer literal.
    Int(i64),
    /// `(a, b, ...)`: a tuple (one element gives a rank-1 tuple).
    Tuple(Vec<Expr>),
    /// `[a, b, ...]`: a list.
    List(Vec<Expr>),
    /// `<a, b, ...>`: a by-mode tiler.
    Tiler(Vec<Expr>),
    /// `_`.
    Underscore,
    /// A bare name such as `float16` or `True`.
    Name(String),
    /// `name(args, key=value)`.
    Call {
        /// Function name.
        name: String,
        /// Positional arguments.
        args: Vec<Expr>,
        /// Keyword arguments in order (each name at most once).
        kwargs: Vec<(String, Expr)>,
    },
    /// `receiver.f(..).g(..)...`: method calls applied left to right.
    Methods {
        /// What the first method is called on.
        receiver: Box<Expr>,
        /// The calls, in order (at least one).
        calls: Vec<MethodCall>,
    },
    /// `first * a / b ...`: `*` and `/` applied left to right; or
    /// `first o a o b ...`: composition (every link `o`), applied right to left.
    Chain {
        /// The leftmost operand.
        first: Box<Expr>,
        /// Each operator with its right operand, in order (at least one).
        links: Vec<Link>,
    },
    /// `lhs op rhs` for `:` and `==`.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
    },
}

/// One method call of a chain: `.name(args, key=value)`.
///
/// ```
/// use retile_calc::{parse, ExprKind};
/// let ExprKind::Methods { calls, .. } = parse("local(2).spatial(8, 4)")?.kind else { panic!() };
/// assert_eq!(calls.len(), 1);
/// assert_eq!((calls[0].name.as_str(), calls[0].args.len()), ("spatial", 2));
/// assert_eq!(calls[0].column, 10);
/// # Ok::<(), retile_calc::CalcError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct MethodCall {
    /// Method name.
    pub name: String,
    /// Positional arguments (after the receiver).
    pub args: Vec<Expr>,
    /// Keyword arguments in order (each name at most once).
    pub kwargs: Vec<(String, Expr)>,
    /// The 1-based column of the method's name.
    pub column: usize,
}

/// One link of an operator chain: `* rhs` or `/ rhs`.
///
/// ```
/// use retile_calc::{parse, BinaryOp, ExprKind};
/// let ExprKind::Chain { links, .. } = parse("8:1 * 4:1 / 2")?.kind else { panic!() };
/// assert_eq!((links[0].op, links[0].column), (BinaryOp::Mul, 5));
/// assert_eq!((links[1].op, links[1].column), (BinaryOp::Div, 11));
/// assert_eq!(links[1].rhs.kind, ExprKind::Int(2));
/// # Ok::<(), retile_calc::CalcError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// `*` or `/`.
    pub op: BinaryOp,
    /// The right operand.
    pub rhs: Expr,
    /// The 1-based column of the operator.
    pub column: usize,
}

/// Binary operators.
///
/// ```
/// use retile_calc::{parse, BinaryOp, ExprKind};
/// let ExprKind::Binary { op, lhs, .. } = parse("(2,3):(1,2) == (2,3)")?.kind else { panic!() };
/// assert_eq!(op, BinaryOp::Eq);
/// assert!(matches!(lhs.kind, ExprKind::Binary { op: BinaryOp::Colon, .. }));
/// # Ok::<(), retile_calc::CalcError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// `shape:stride`.
    Colon,
    /// `*`.
    Mul,
    /// `/`.
    Div,
    /// `==`.
    Eq,
    /// `o`: composition, CuTe's `Sw<3,4,3> o (8,64):(64,1)`.
    Compose,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Int(i64),
    Name(String),
    Punct(&'static str),
    End,
}

const PUNCTS: [&str; 14] = [
    "==", "(", ")", "[", "]", "<", ">", ",", ":", "=", ".", "*", "/", "-",
];

fn lex(text: &str) -> Result<Vec<(Token, usize)>, CalcError> {
    let mut tokens = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let column = i + 1;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let digits = &text[start..i];
            let value = digits.parse().map_err(|_| {
                CalcError::at(column, format!("integer {digits} does not fit in 64 bits"))
            })?;
            tokens.push((Token::Int(value), column));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            tokens.push((Token::Name(text[start..i].to_string()), column));
        } else if let Some(p) = PUNCTS.iter().find(|p| text[i..].starts_with(**p)) {
            tokens.push((Token::Punct(p), column));
            i += p.len();
        } else {
            let ch = text[i..].chars().next().unwrap_or('?');
            return Err(CalcError::at(
                column,
                format!("unexpected character {}", describe_char(ch)),
            ));
        }
    }
    tokens.push((Token::End, text.len() + 1));
    Ok(tokens)
}

/// A character for an error message: printable ASCII as itself, letters
/// beyond ASCII with their code point, anything else (controls, NUL,
/// invisible formatting) only as its code point, never raw.
///
/// ```
/// let err = retile_calc::parse("size(\u{0})").unwrap_err();
/// assert_eq!(err.to_string(), "at column 6: unexpected character U+0000");
/// let err = retile_calc::parse("size(é)").unwrap_err();
/// assert_eq!(err.to_string(), "at column 6: unexpected character 'é' (U+00E9)");
/// ```
pub fn describe_char(ch: char) -> String {
    if ch.is_ascii_graphic() {
        format!("'{ch}'")
    } else if ch.is_alphanumeric() {
        format!("'{ch}' (U+{:04X})", ch as u32)
    } else {
        format!("U+{:04X}", ch as u32)
    }
}

/// Parses one expression; the whole text must be consumed.
///
/// ```
/// use retile_calc::parse;
/// assert!(parse("composition((4,2):(2,1), <2:1,_>)").is_ok());
/// let err = parse("coalesce((2,2):(1,2)").unwrap_err();
/// assert_eq!(err.column(), Some(21));
/// let err = parse("reduce(spatial(3, 4), dims=[0], dims=[1])").unwrap_err();
/// assert_eq!(err.to_string(), "at column 33: keyword argument 'dims' repeated; give it once");
/// ```
pub fn parse(text: &str) -> Result<Expr, CalcError> {
    if text.len() > MAX_LEN {
        return Err(CalcError::new(format!(
            "the expression is {} bytes long, more than the limit of {MAX_LEN} bytes (1 MiB); split it into several",
            text.len()
        )));
    }
    let mut parser = Parser {
        tokens: lex(text)?,
        pos: 0,
        depth: 0,
    };
    let expr = parser.expr()?;
    match parser.peek() {
        Token::End => Ok(expr),
        _ => Err(parser.unexpected("an operator or the end of the expression")),
    }
}

/// Keyword arguments of a call, in order: `name=value`.
type Keywords = Vec<(String, Expr)>;

struct Parser {
    tokens: Vec<(Token, usize)>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> &Token {
        &self.tokens[self.pos.min(self.tokens.len() - 1)].0
    }

    fn column(&self) -> usize {
        self.tokens[self.pos.min(self.tokens.len() - 1)].1
    }

    fn advance(&mut self) -> Token {
        let token = self.peek().clone();
        self.pos = (self.pos + 1).min(self.tokens.len() - 1);
        token
    }

    fn eat(&mut self, punct: &str) -> bool {
        if matches!(self.peek(), Token::Punct(p) if *p == punct) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, punct: &str) -> Result<(), CalcError> {
        if self.eat(punct) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("'{punct}'")))
        }
    }

    fn unexpected(&self, wanted: &str) -> CalcError {
        let found = match self.peek() {
            Token::Int(v) => format!("{v}"),
            Token::Name(n) => n.clone(),
            Token::Punct(p) => format!("'{p}'"),
            Token::End => "the end of the expression".to_string(),
        };
        CalcError::at(self.column(), format!("expected {wanted}, found {found}"))
    }

    fn expr(&mut self) -> Result<Expr, CalcError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(CalcError::at(
                self.column(),
                format!(
                    "expression nested deeper than {MAX_DEPTH} levels of brackets and calls, the limit; \
                     split it into several expressions"
                ),
            ));
        }
        let lhs = self.compose()?;
        let result = if matches!(self.peek(), Token::Punct("==")) {
            self.advance();
            let rhs = self.compose()?;
            binary(BinaryOp::Eq, lhs, rhs)
        } else {
            lhs
        };
        self.depth -= 1;
        Ok(result)
    }

    /// A chain of `o` (composition), kept flat (see the module docs).
    fn compose(&mut self) -> Result<Expr, CalcError> {
        let first = self.product()?;
        let mut links = Vec::new();
        while matches!(self.peek(), Token::Name(n) if n == "o") {
            let column = self.column();
            self.advance();
            let rhs = self.product()?;
            links.push(Link {
                op: BinaryOp::Compose,
                rhs,
                column,
            });
        }
        Ok(chained(first, links))
    }

    /// A chain of `*` and `/`, kept flat (see the module docs).
    fn product(&mut self) -> Result<Expr, CalcError> {
        let first = self.layout()?;
        let mut links = Vec::new();
        loop {
            let op = match self.peek() {
                Token::Punct("*") => BinaryOp::Mul,
                Token::Punct("/") => BinaryOp::Div,
                _ => break,
            };
            let column = self.column();
            self.advance();
            let rhs = self.layout()?;
            links.push(Link { op, rhs, column });
        }
        Ok(chained(first, links))
    }

    fn layout(&mut self) -> Result<Expr, CalcError> {
        let lhs = self.postfix()?;
        if self.eat(":") {
            let rhs = self.postfix()?;
            return Ok(binary(BinaryOp::Colon, lhs, rhs));
        }
        Ok(lhs)
    }

    /// A chain of method calls, kept flat (see the module docs).
    fn postfix(&mut self) -> Result<Expr, CalcError> {
        let receiver = self.primary()?;
        let mut calls = Vec::new();
        while self.eat(".") {
            let column = self.column();
            let Token::Name(name) = self.advance() else {
                return Err(CalcError::at(column, "expected a method name after '.'"));
            };
            self.expect("(")?;
            let (args, kwargs) = self.args(")")?;
            calls.push(MethodCall {
                name,
                args,
                kwargs,
                column,
            });
        }
        if calls.is_empty() {
            return Ok(receiver);
        }
        let column = receiver.column;
        Ok(Expr {
            kind: ExprKind::Methods {
                receiver: Box::new(receiver),
                calls,
            },
            column,
        })
    }

    fn primary(&mut self) -> Result<Expr, CalcError> {
        let column = self.column();
        let kind = match self.advance() {
            Token::Int(v) => ExprKind::Int(v),
            Token::Punct("-") => match self.advance() {
                Token::Int(v) => ExprKind::Int(-v),
                _ => return Err(CalcError::at(column + 1, "expected an integer after '-'")),
            },
            Token::Punct("(") => ExprKind::Tuple(self.items(")")?),
            Token::Punct("[") => ExprKind::List(if self.eat("]") {
                Vec::new()
            } else {
                self.items("]")?
            }),
            Token::Punct("<") => ExprKind::Tiler(self.items(">")?),
            Token::Name(name) if name == "_" => ExprKind::Underscore,
            Token::Name(name) if name == "Sw" && self.eat("<") => ExprKind::Call {
                name,
                args: self.items(">")?,
                kwargs: Vec::new(),
            },
            Token::Name(name) => {
                if self.eat("(") {
                    let (args, kwargs) = self.args(")")?;
                    ExprKind::Call { name, args, kwargs }
                } else {
                    ExprKind::Name(name)
                }
            }
            _ => {
                self.pos -= 1;
                return Err(self.unexpected("a value"));
            }
        };
        Ok(Expr { kind, column })
    }

    /// One or more comma-separated expressions, then `close`.
    fn items(&mut self, close: &str) -> Result<Vec<Expr>, CalcError> {
        let mut items = vec![self.expr()?];
        while self.eat(",") {
            items.push(self.expr()?);
        }
        self.expect(close)?;
        Ok(items)
    }

    /// Call arguments up to `close`: positional first, then `name=value`.
    fn args(&mut self, close: &str) -> Result<(Vec<Expr>, Keywords), CalcError> {
        let mut args = Vec::new();
        let mut kwargs = Vec::new();
        let mut seen = std::collections::HashSet::new();
        if self.eat(close) {
            return Ok((args, kwargs));
        }
        loop {
            let is_keyword = matches!(self.peek(), Token::Name(_))
                && matches!(self.tokens.get(self.pos + 1), Some((Token::Punct("="), _)));
            if is_keyword {
                let column = self.column();
                let Token::Name(key) = self.advance() else {
                    return Err(CalcError::new(
                        "internal error: keyword argument without a name",
                    ));
                };
                if !seen.insert(key.clone()) {
                    return Err(CalcError::at(
                        column,
                        format!("keyword argument '{key}' repeated; give it once"),
                    ));
                }
                self.advance();
                kwargs.push((key, self.expr()?));
            } else if kwargs.is_empty() {
                args.push(self.expr()?);
            } else {
                return Err(CalcError::at(
                    self.column(),
                    "a positional argument cannot follow a keyword argument",
                ));
            }
            if !self.eat(",") {
                break;
            }
        }
        self.expect(close)?;
        Ok((args, kwargs))
    }
}

/// `first` alone, or the chain of `first` and `links`.
fn chained(first: Expr, links: Vec<Link>) -> Expr {
    if links.is_empty() {
        return first;
    }
    let column = first.column;
    Expr {
        kind: ExprKind::Chain {
            first: Box::new(first),
            links,
        },
        column,
    }
}

fn binary(op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr {
    let column = lhs.column;
    Expr {
        kind: ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        },
        column,
    }
}
