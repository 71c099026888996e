//! Typing: an expression's result type over a schema, and the mismatches it reports.

use super::*;

impl Expr {
    /// The constant this expression is, if it is one (looking through aliases).
    pub(super) fn literal(&self) -> Option<&Literal> {
        match self {
            Expr::Literal(l) => Some(l),
            Expr::Alias { expr, .. } => expr.literal(),
            _ => None,
        }
    }

    /// A [`FrameError::TypeMismatch`] that names this expression.
    pub(super) fn mismatch(&self, message: impl fmt::Display) -> FrameError {
        FrameError::TypeMismatch(format!("{message} in `{self}`"))
    }

    /// Its result type over a frame of schema `schema`: [`FrameError::ColumnNotFound`] for
    /// unknown names, [`FrameError::TypeMismatch`] for operands it cannot combine (such as a
    /// string plus an integer, `str_contains` on a number, `dt_hour` on an integer, `&` on
    /// non-booleans).
    pub fn data_type(&self, schema: &Schema) -> FrameResult<DataType> {
        match self {
            Expr::Column(name) => Ok(schema
                .field(column_index(schema, name)?)
                .data_type()
                .clone()),
            Expr::Literal(l) => l.check().map(|()| l.data_type()),
            Expr::Binary { op, left, right } => {
                let (l, r) = (left.data_type(schema)?, right.data_type(schema)?);
                Ok(self.plan_binary(*op, &l, &r, left, right)?.output_type(*op))
            }
            Expr::Not(e) => self.not_type(&e.data_type(schema)?),
            Expr::Negate(e) => self.negate_type(&e.data_type(schema)?),
            Expr::IsNull(e) | Expr::IsNotNull(e) => e.data_type(schema).map(|_| DataType::Boolean),
            Expr::FillNull { expr, value } => {
                let (e, v) = (expr.data_type(schema)?, value.data_type(schema)?);
                self.fill_type(&e, &v, value.literal())
            }
            Expr::Cast { expr, to } => {
                let from = expr.data_type(schema)?;
                self.cast_type(&from, to)
            }
            Expr::StrContains { expr, .. } => self.contains_type(&expr.data_type(schema)?),
            Expr::DatePart { expr, .. } => self.date_part_type(&expr.data_type(schema)?),
            Expr::Function { func, args } => {
                let types = args
                    .iter()
                    .map(|a| a.data_type(schema))
                    .collect::<FrameResult<Vec<_>>>()?;
                func.data_type(&types, self)
            }
            Expr::Alias { expr, .. } => expr.data_type(schema),
        }
    }

    /// How `left op right` runs on operands of types `l` and `r`.
    pub(super) fn plan_binary(
        &self,
        op: BinaryOperator,
        l: &DataType,
        r: &DataType,
        left: &Expr,
        right: &Expr,
    ) -> FrameResult<Plan> {
        use BinaryOperator::*;
        match op {
            Add | Sub | Mul | Div | Mod => {
                self.plan_arithmetic(op, l, r, left.literal(), right.literal())
            }
            Eq | NotEq | Lt | LtEq | Gt | GtEq => {
                self.plan_compare(op, l, r, left.literal(), right.literal())
            }
            And | Or => match (is_boolish(l), is_boolish(r)) {
                (true, true) => Ok(Plan::Logical),
                _ => Err(self.mismatch(format_args!("cannot apply {op} to {l} and {r}"))),
            },
        }
    }

    pub(super) fn plan_arithmetic(
        &self,
        op: BinaryOperator,
        l: &DataType,
        r: &DataType,
        l_lit: Option<&Literal>,
        r_lit: Option<&Literal>,
    ) -> FrameResult<Plan> {
        let numberish = |t: &DataType| is_numeric(t) || *t == DataType::Null;
        let decimal = Dec::of(l).is_some() || Dec::of(r).is_some();
        match (l, r) {
            (DataType::Null, DataType::Null) => Ok(Plan::Null),
            // Decimals with decimals and integers stay exact; `/` and floats are Float64.
            _ if decimal && op != BinaryOperator::Div => {
                match (Dec::of_operand(l, l_lit), Dec::of_operand(r, r_lit)) {
                    (Some(a), Some(b)) => {
                        let out = a.arithmetic(op, b).map_err(|m| self.mismatch(m))?;
                        Ok(Plan::Decimal {
                            left: DataType::Decimal128(a.precision, a.scale),
                            right: DataType::Decimal128(b.precision, b.scale),
                            out: out.data_type(),
                        })
                    }
                    _ if numberish(l) && numberish(r) => Ok(Plan::Arithmetic(DataType::Float64)),
                    _ => Err(self.mismatch(format_args!("cannot apply {op} to {l} and {r}"))),
                }
            }
            (l, r) if numberish(l) && numberish(r) => {
                let float = op == BinaryOperator::Div || l.is_floating() || r.is_floating();
                Ok(Plan::Arithmetic(if float {
                    DataType::Float64
                } else {
                    DataType::Int64
                }))
            }
            (DataType::Timestamp(..), DataType::Timestamp(..))
                if op == BinaryOperator::Sub && l == r =>
            {
                Ok(Plan::Arithmetic(l.clone()))
            }
            _ => self
                .plan_time_arithmetic(op, l, r, l_lit, r_lit)
                .ok_or_else(|| self.mismatch(format_args!("cannot apply {op} to {l} and {r}"))),
        }
    }

    pub(super) fn plan_compare(
        &self,
        op: BinaryOperator,
        l: &DataType,
        r: &DataType,
        l_lit: Option<&Literal>,
        r_lit: Option<&Literal>,
    ) -> FrameResult<Plan> {
        use DataType::*;
        if *l == Null || *r == Null {
            return Ok(Plan::Null);
        }
        if let Some(plan) = self.plan_time_compare(l, r, l_lit, r_lit)? {
            return Ok(plan);
        }
        // A literal that converts without loss takes the other side's type.
        // (A dictionary column compares with a constant of its value type.)
        if r_lit.is_some_and(|lit| lit.fits(l)) {
            return Ok(Plan::Compare(l.clone(), scalar_type(l).clone()));
        }
        if l_lit.is_some_and(|lit| lit.fits(r)) {
            return Ok(Plan::Compare(scalar_type(r).clone(), r.clone()));
        }
        // A string literal against a date or timestamp is parsed as that type.
        if let (Some(Literal::Str(s)), true) = (r_lit, l.is_temporal()) {
            return self
                .parse_literal(s, l)
                .map(|()| Plan::Compare(l.clone(), l.clone()));
        }
        if let (Some(Literal::Str(s)), true) = (l_lit, r.is_temporal()) {
            return self
                .parse_literal(s, r)
                .map(|()| Plan::Compare(r.clone(), r.clone()));
        }
        if Dec::of(l).is_some() || Dec::of(r).is_some() {
            return self.plan_decimal_compare(op, l, r, l_lit, r_lit);
        }
        let common = match (l, r) {
            _ if l == r && !l.is_nested() => l.clone(),
            (l, r) if is_numeric(l) && is_numeric(r) => {
                if l.is_floating() || r.is_floating() {
                    Float64
                } else {
                    Int64
                }
            }
            (l, r) if is_string(l) && is_string(r) => {
                if string_value_type(l) == string_value_type(r) {
                    return Ok(Plan::Compare(l.clone(), r.clone()));
                }
                common_string_type(l, r)
            }
            (Date32 | Date64, Date32 | Date64) => Date64,
            (Timestamp(lu, ltz), Timestamp(ru, rtz)) if ltz.is_some() == rtz.is_some() => {
                Timestamp(finer_unit(*lu, *ru), ltz.clone())
            }
            _ => return Err(self.mismatch(format_args!("cannot compare {l} with {r} ({op})"))),
        };
        Ok(Plan::Compare(common.clone(), common))
    }

    /// A comparison with a decimal side (whose constant, if any, does not fit the other
    /// side's type): exact in the decimal that holds both (a float constant counting as its
    /// shortest decimal spelling), else as floats.
    fn plan_decimal_compare(
        &self,
        op: BinaryOperator,
        l: &DataType,
        r: &DataType,
        l_lit: Option<&Literal>,
        r_lit: Option<&Literal>,
    ) -> FrameResult<Plan> {
        let side = |dt: &DataType, lit: Option<&Literal>| match lit {
            Some(lit @ Literal::Float(_)) => lit.decimal_value().map(|(_, d)| d),
            lit => Dec::of_operand(dt, lit),
        };
        match (side(l, l_lit), side(r, r_lit)) {
            (Some(a), Some(b)) => {
                let common = a.common(b);
                if common.precision > decimal::MAX_PRECISION * 2 {
                    return Err(self.mismatch(format_args!(
                        "cannot compare {l} with {r} ({op}): no decimal holds both"
                    )));
                }
                let t = common.data_type();
                Ok(Plan::Compare(t.clone(), t))
            }
            _ if is_numeric(l) && is_numeric(r) => {
                Ok(Plan::Compare(DataType::Float64, DataType::Float64))
            }
            _ => Err(self.mismatch(format_args!("cannot compare {l} with {r} ({op})"))),
        }
    }

    /// Checks that string literal `s` parses as temporal type `dt`.
    pub(super) fn parse_literal(&self, s: &str, dt: &DataType) -> FrameResult<()> {
        let array = StringArray::from(vec![s]);
        cast_with_options(&array, dt, &STRICT)
            .map(|_| ())
            .map_err(|e| self.mismatch(format_args!("cannot read {s:?} as {dt}: {e}")))
    }

    pub(super) fn not_type(&self, dt: &DataType) -> FrameResult<DataType> {
        match is_boolish(dt) {
            true => Ok(DataType::Boolean),
            false => Err(self.mismatch(format_args!("cannot apply not to {dt}"))),
        }
    }

    pub(super) fn negate_type(&self, dt: &DataType) -> FrameResult<DataType> {
        use DataType::*;
        match dt {
            Int8 | Int16 | Int32 | Int64 | Float16 | Float32 | Float64 | Duration(_) | Null => {
                Ok(dt.clone())
            }
            UInt8 | UInt16 | UInt32 | UInt64 => Ok(Int64),
            Decimal32(..) | Decimal64(..) | Decimal128(..) | Decimal256(..) => Ok(dt.clone()),
            _ => Err(self.mismatch(format_args!("cannot negate {dt}"))),
        }
    }

    pub(super) fn fill_type(
        &self,
        e: &DataType,
        v: &DataType,
        v_lit: Option<&Literal>,
    ) -> FrameResult<DataType> {
        let keep = |dt: &DataType| Ok(string_value_type(dt).clone());
        match (e, v) {
            (e, DataType::Null) => Ok(e.clone()),
            (DataType::Null, v) => keep(v),
            (e, _) if v_lit.is_some_and(|lit| lit.fits(e)) => keep(e),
            (e, v) if string_value_type(e) == string_value_type(v) => keep(e),
            (e, v) if Dec::of(e).is_some() || Dec::of(v).is_some() => {
                decimal_branches(e, v).map_err(|m| self.mismatch(format_args!("fill_null: {m}")))
            }
            (e, v) if is_numeric(e) && is_numeric(v) => match e.is_floating() || v.is_floating() {
                true => Ok(DataType::Float64),
                false => Ok(DataType::Int64),
            },
            (e, v) if is_string(e) && is_string(v) => Ok(common_string_type(e, v)),
            _ => Err(self.mismatch(format_args!("cannot fill nulls of {e} with {v}"))),
        }
    }

    pub(super) fn cast_type(&self, from: &DataType, to: &DataType) -> FrameResult<DataType> {
        match can_cast_types(from, to) {
            true => Ok(to.clone()),
            false => Err(self.mismatch(format_args!("cannot cast {from} to {to}"))),
        }
    }

    pub(super) fn contains_type(&self, dt: &DataType) -> FrameResult<DataType> {
        match is_string(dt) || *dt == DataType::Null {
            true => Ok(DataType::Boolean),
            false => Err(self.mismatch(format_args!("str_contains needs strings, not {dt}"))),
        }
    }

    /// A date part's type: of a date, or of a timestamp on its zone's wall clock (a zone
    /// the database does not hold is a mismatch, found before any row is read).
    pub(super) fn date_part_type(&self, dt: &DataType) -> FrameResult<DataType> {
        match dt {
            DataType::Date32 | DataType::Date64 | DataType::Timestamp(..) | DataType::Null => {
                zone::zone_reads(dt)
                    .map_err(|e| self.mismatch(format_args!("date parts of {dt}: {e}")))?;
                Ok(DataType::Int32)
            }
            _ => Err(self.mismatch(format_args!(
                "date parts need a Date32, Date64 or Timestamp, not {dt}"
            ))),
        }
    }
}

/// The type in which decimal `a` and a decimal, integer or float `b` (or the other way
/// round) meet as the branches of `fill_null` or `if_else`: the decimal that holds both, or
/// `Float64` with a float; why not, otherwise.
pub(super) fn decimal_branches(a: &DataType, b: &DataType) -> Result<DataType, String> {
    if (a.is_floating() || b.is_floating()) && is_numeric(a) && is_numeric(b) {
        return Ok(DataType::Float64);
    }
    match (Dec::of_operand(a, None), Dec::of_operand(b, None)) {
        (Some(x), Some(y)) => {
            let common = x.common(y);
            match common.precision <= decimal::MAX_PRECISION {
                true => Ok(common.data_type()),
                false => Err(format!(
                    "{a} and {b} need {} digits, past Decimal128's {}",
                    common.precision,
                    decimal::MAX_PRECISION
                )),
            }
        }
        _ => Err(format!("{a} and {b} have no common type")),
    }
}

/// Boolean, or the type of a null literal.
pub(super) fn is_boolish(dt: &DataType) -> bool {
    matches!(dt, DataType::Boolean | DataType::Null)
}

/// The value type of a dictionary, else the type itself.
pub(super) fn scalar_type(dt: &DataType) -> &DataType {
    match dt {
        DataType::Dictionary(_, value) => value,
        dt => dt,
    }
}

/// The value type of a string dictionary, else the type itself.
pub(super) fn string_value_type(dt: &DataType) -> &DataType {
    match dt {
        DataType::Dictionary(_, value) if is_string(value) => value,
        dt => dt,
    }
}

/// The string type two different string encodings convert to: a view if either is one
/// (cheap to build from offsets), else `LargeUtf8` (which holds any `Utf8`).
pub(super) fn common_string_type(l: &DataType, r: &DataType) -> DataType {
    let view = [l, r]
        .iter()
        .any(|t| *string_value_type(t) == DataType::Utf8View);
    match view {
        true => DataType::Utf8View,
        false => DataType::LargeUtf8,
    }
}

/// The finer of two time units.
pub(super) fn finer_unit(a: TimeUnit, b: TimeUnit) -> TimeUnit {
    let rank = |u: TimeUnit| match u {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 1,
        TimeUnit::Microsecond => 2,
        TimeUnit::Nanosecond => 3,
    };
    if rank(a) >= rank(b) {
        a
    } else {
        b
    }
}
