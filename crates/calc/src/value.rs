//! Values of the calculator and how they print.

use std::fmt;

use retile_layout::{ComposedLayout, IntTuple, Layout, Swizzle, Tiler};

use crate::error::CalcError;

/// A calculator value.
///
/// ```
/// use retile_calc::Value;
/// assert_eq!(Value::Bool(true).to_string(), "true");
/// assert_eq!(Value::List(vec![Value::Int(1), Value::Int(2)]).to_string(), "[1, 2]");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// An integer.
    Int(i64),
    /// `true` / `false`.
    Bool(bool),
    /// A tuple `(a,b)`: a shape, a coordinate, or a tuple of tilers.
    Tuple(Vec<Value>),
    /// A list `[a, b]`.
    List(Vec<Value>),
    /// A CuTe layout.
    Layout(Layout),
    /// A by-mode tiler `<...>`.
    Tiler(Tiler),
    /// `_`.
    Underscore,
    /// A bare name (`float16`, `True`).
    Name(String),
    /// A device (stick) layout.
    Device(retile_device::DeviceLayout),
    /// A register layout (tilus).
    Register(retile_register::RegisterLayout),
    /// An in-thread transpose plan.
    Transpose(retile_copy::TransposePlan),
    /// A swizzle `Sw<B,M,S>`.
    Swizzle(Swizzle),
    /// A swizzled layout `Sw<B,M,S> o L`.
    Composed(ComposedLayout),
    /// Bank conflicts of an access pattern, and the swizzle that removes them.
    Banks(Box<retile_copy::BankAnalysis>),
}

impl Value {
    /// A short name of the value's type, for error messages.
    ///
    /// ```
    /// use retile_calc::{evaluate, Value};
    /// assert_eq!(Value::Int(3).type_name(), "an integer");
    /// assert_eq!(evaluate("(2,3):(1,2)")?.type_name(), "a layout");
    /// assert_eq!(evaluate("Sw<3,4,3>")?.type_name(), "a swizzle");
    /// # Ok::<(), retile_calc::CalcError>(())
    /// ```
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Int(_) => "an integer",
            Value::Bool(_) => "a boolean",
            Value::Tuple(_) => "a tuple",
            Value::List(_) => "a list",
            Value::Layout(_) => "a layout",
            Value::Tiler(_) => "a tiler",
            Value::Underscore => "_",
            Value::Name(_) => "a name",
            Value::Device(_) => "a device layout",
            Value::Register(_) => "a register layout",
            Value::Transpose(_) => "a transpose plan",
            Value::Swizzle(_) => "a swizzle",
            Value::Composed(_) => "a swizzled layout",
            Value::Banks(_) => "a bank-conflict analysis",
        }
    }

    /// The value as an integer.
    ///
    /// ```
    /// use retile_calc::{evaluate, Value};
    /// assert_eq!(evaluate("size((2,3):(1,2))")?.to_int()?, 6);
    /// let err = Value::Bool(true).to_int().unwrap_err();
    /// assert_eq!(err.message(), "expected an integer, got a boolean");
    /// # Ok::<(), retile_calc::CalcError>(())
    /// ```
    pub fn to_int(&self) -> Result<i64, CalcError> {
        match self {
            Value::Int(v) => Ok(*v),
            other => Err(CalcError::new(format!(
                "expected an integer, got {}",
                other.type_name()
            ))),
        }
    }

    /// The value as an IntTuple (an integer or a tuple of them).
    ///
    /// ```
    /// use retile_calc::{evaluate, Value};
    /// use retile_layout::IntTuple;
    /// let t = evaluate("(2,(3,4))")?.to_int_tuple()?;
    /// assert_eq!(t, "(2,(3,4))".parse::<IntTuple>().unwrap());
    /// let err = Value::List(vec![Value::Int(1)]).to_int_tuple().unwrap_err();
    /// assert_eq!(err.message(), "expected an integer or a tuple of integers, got a list");
    /// # Ok::<(), retile_calc::CalcError>(())
    /// ```
    pub fn to_int_tuple(&self) -> Result<IntTuple, CalcError> {
        match self {
            Value::Int(v) => Ok(IntTuple::Int(*v)),
            Value::Tuple(items) => items
                .iter()
                .map(Value::to_int_tuple)
                .collect::<Result<_, _>>()
                .map(IntTuple::Tuple),
            other => Err(CalcError::new(format!(
                "expected an integer or a tuple of integers, got {}",
                other.type_name()
            ))),
        }
    }

    /// The value as a layout: a layout, or a shape (compact column-major).
    ///
    /// ```
    /// use retile_calc::{evaluate, Value};
    /// assert_eq!(evaluate("(2,3)")?.to_layout()?.to_string(), "(2,3):(1,2)");
    /// assert_eq!(evaluate("(2,3):(3,1)")?.to_layout()?.to_string(), "(2,3):(3,1)");
    /// let err = Value::Bool(false).to_layout().unwrap_err();
    /// assert_eq!(err.message(), "expected a layout or a shape, got a boolean");
    /// # Ok::<(), retile_calc::CalcError>(())
    /// ```
    pub fn to_layout(&self) -> Result<Layout, CalcError> {
        match self {
            Value::Layout(l) => Ok(l.clone()),
            Value::Int(_) | Value::Tuple(_) => Ok(Layout::from_shape(self.to_int_tuple()?)?),
            other => Err(CalcError::new(format!(
                "expected a layout or a shape, got {}",
                other.type_name()
            ))),
        }
    }

    /// The value as a tiler: a layout, an integer `n` (`n:1`), a tuple (by
    /// mode), `<...>` or `_`.
    ///
    /// ```
    /// use retile_calc::{evaluate, Value};
    /// use retile_layout::Tiler;
    /// assert_eq!(Value::Underscore.to_tiler()?, Tiler::Underscore);
    /// let by_mode = evaluate("(2, _)")?.to_tiler()?;
    /// assert!(matches!(&by_mode, Tiler::Modes(m) if m.len() == 2 && m[1] == Tiler::Underscore));
    /// let err = Value::Bool(true).to_tiler().unwrap_err();
    /// assert_eq!(err.message(), "expected a tiler, got a boolean");
    /// # Ok::<(), retile_calc::CalcError>(())
    /// ```
    pub fn to_tiler(&self) -> Result<Tiler, CalcError> {
        match self {
            Value::Tiler(t) => Ok(t.clone()),
            Value::Layout(l) => Ok(Tiler::Layout(l.clone())),
            Value::Underscore => Ok(Tiler::Underscore),
            Value::Int(_) => Ok(Tiler::from_shape(&self.to_int_tuple()?)?),
            Value::Tuple(items) => items
                .iter()
                .map(Value::to_tiler)
                .collect::<Result<_, _>>()
                .map(Tiler::Modes),
            other => Err(CalcError::new(format!(
                "expected a tiler, got {}",
                other.type_name()
            ))),
        }
    }

    /// The value as a list of integers (`[1, 2]` or `(1, 2)`).
    ///
    /// ```
    /// use retile_calc::{evaluate, Value};
    /// assert_eq!(evaluate("[1, 2, 3]")?.to_ints()?, vec![1, 2, 3]);
    /// assert_eq!(evaluate("(4, 5)")?.to_ints()?, vec![4, 5]);
    /// assert_eq!(Value::Int(7).to_ints()?, vec![7]);
    /// assert!(evaluate("[1, (2, 3)]")?.to_ints().is_err());
    /// # Ok::<(), retile_calc::CalcError>(())
    /// ```
    pub fn to_ints(&self) -> Result<Vec<i64>, CalcError> {
        match self {
            Value::List(items) | Value::Tuple(items) => items.iter().map(Value::to_int).collect(),
            Value::Int(v) => Ok(vec![*v]),
            other => Err(CalcError::new(format!(
                "expected a list of integers, got {}",
                other.type_name()
            ))),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Tuple(items) => write_items(f, items, "(", ",", ")"),
            Value::List(items) => write_items(f, items, "[", ", ", "]"),
            Value::Layout(l) => write!(f, "{l}"),
            Value::Tiler(t) => write!(f, "{t}"),
            Value::Underscore => f.write_str("_"),
            Value::Name(n) => f.write_str(n),
            Value::Device(l) => write!(f, "{l}"),
            Value::Register(l) => write!(f, "{l}"),
            Value::Transpose(p) => write!(f, "{p}"),
            Value::Swizzle(s) => write!(f, "{s}"),
            Value::Composed(c) => write!(f, "{c}"),
            Value::Banks(b) => write!(f, "{b}"),
        }
    }
}

fn write_items(
    f: &mut fmt::Formatter<'_>,
    items: &[Value],
    open: &str,
    sep: &str,
    close: &str,
) -> fmt::Result {
    f.write_str(open)?;
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        write!(f, "{item}")?;
    }
    f.write_str(close)
}
