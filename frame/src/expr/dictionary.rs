//! Predicates over one dictionary-encoded column, evaluated once per distinct value: a
//! filter on `l_shipmode` (7 values in a dictionary) compares 7 strings and gathers the 7
//! answers by the rows' keys, instead of comparing a string per row. Expressions are
//! elementwise, so an answer per value is the answer per row.

use super::*;
use arrow::array::{new_null_array, AsArray, UInt32Array};
use arrow::compute::{cast, concat, take};
use arrow::datatypes::Field;

impl Expr {
    /// The one column it reads; `None` where it reads none or several.
    fn only_column(&self) -> Option<&str> {
        let mut found: Option<&str> = None;
        let mut several = false;
        self.walk(&mut |e| match (e, found) {
            (Expr::Column(name), Some(f)) if f != name => several = true,
            (Expr::Column(name), _) => found = Some(name),
            _ => {}
        });
        found.filter(|_| !several)
    }

    /// Its value on `batch` where it is a Boolean expression (not a bare column) of one
    /// column that `batch` holds as a dictionary of fewer values than rows: evaluated on
    /// the dictionary's values (and a null, where a key is null), then gathered by the
    /// keys. `None` elsewhere.
    pub(super) fn eval_on_dictionary(&self, batch: &RecordBatch) -> FrameResult<Option<ArrayRef>> {
        if matches!(self, Expr::Column(_) | Expr::Literal(_)) {
            return Ok(None);
        }
        let Some(name) = self.only_column() else {
            return Ok(None);
        };
        let schema = batch.schema();
        let Ok(i) = schema.index_of(name) else {
            return Ok(None);
        };
        let column = batch.column(i);
        let Some(dict) = column.as_any_dictionary_opt() else {
            return Ok(None);
        };
        let values = dict.values();
        if values.len() >= column.len() || !matches!(self.data_type(&schema), Ok(DataType::Boolean))
        {
            return Ok(None);
        }
        let keys = cast(dict.keys(), &DataType::UInt32)?;
        let keys = keys.as_primitive::<arrow::datatypes::UInt32Type>();
        let (values, keys) = match keys.null_count() {
            0 => (values.clone(), keys.clone()),
            _ => {
                let null = values.len() as u32;
                let with_null = concat(&[
                    values.as_ref(),
                    new_null_array(values.data_type(), 1).as_ref(),
                ])?;
                let keys: UInt32Array = keys.iter().map(|k| Some(k.unwrap_or(null))).collect();
                (with_null, keys)
            }
        };
        let field = Field::new(name, values.data_type().clone(), true);
        let distinct = RecordBatch::try_new(Arc::new(Schema::new(vec![field])), vec![values])?;
        let answers = self.evaluate(&distinct)?;
        Ok(Some(take(answers.as_ref(), &keys, None)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{DictionaryArray, Int64Array, StringArray};
    use arrow::datatypes::{Int32Type, Int8Type};

    /// A batch of `d`, dictionary strings with a null key, a null value, an unused value
    /// and repeated keys (keys of type `K`), and `n`, integers.
    fn batch<K: arrow::datatypes::ArrowDictionaryKeyType>() -> RecordBatch
    where
        K::Native: From<i8>,
    {
        let values = StringArray::from(vec![
            Some("AIR"),
            Some("MAIL"),
            None,
            Some("unused"),
            Some("AIR REG"),
        ]);
        let keys: Vec<Option<i8>> = vec![
            Some(0),
            Some(1),
            None,
            Some(2),
            Some(4),
            Some(0),
            Some(4),
            Some(1),
            Some(0),
            None,
        ];
        let keys = arrow::array::PrimitiveArray::<K>::from_iter(
            keys.into_iter().map(|k| k.map(K::Native::from)),
        );
        let d = DictionaryArray::<K>::try_new(keys, Arc::new(values)).unwrap();
        let n = Int64Array::from((0..10).collect::<Vec<i64>>());
        RecordBatch::try_from_iter([
            ("d", Arc::new(d) as ArrayRef),
            ("n", Arc::new(n) as ArrayRef),
        ])
        .unwrap()
    }

    /// `batch` with `d` as plain strings.
    fn plain(batch: &RecordBatch) -> RecordBatch {
        let d = cast(batch.column(0), &DataType::Utf8).unwrap();
        RecordBatch::try_from_iter([("d", d), ("n", batch.column(1).clone())]).unwrap()
    }

    #[test]
    fn predicates_on_a_dictionary_equal_those_on_its_strings() {
        let predicates = [
            col("d").eq("AIR"),
            col("d").ne("AIR"),
            col("d").isin(&[Literal::from("AIR"), Literal::from("AIR REG")]),
            col("d")
                .isin(&[Literal::from("AIR"), Literal::from("AIR REG")])
                .fill_null(false),
            col("d").str_contains("IR"),
            col("d").like("%REG"),
            col("d").is_null(),
            col("d").eq("MAIL").not(),
            col("d").eq("AIR").or_(col("d").is_null()),
        ];
        for b in [batch::<Int8Type>(), batch::<Int32Type>()] {
            for p in &predicates {
                let by_values = p
                    .eval_on_dictionary(&b)
                    .unwrap()
                    .expect("one dictionary column");
                let by_rows = p.evaluate(&plain(&b)).unwrap();
                assert_eq!(by_values.as_ref(), by_rows.as_ref(), "{p}");
                assert_eq!(p.evaluate(&b).unwrap().as_ref(), by_rows.as_ref(), "{p}");
            }
        }
    }

    #[test]
    fn other_expressions_are_evaluated_row_by_row() {
        let b = batch::<Int32Type>();
        // Two columns; a bare column; a string result: not for the dictionary's values.
        let mixed = col("d").eq("AIR").and_(col("n").gt(lit(3i64)));
        assert!(mixed.eval_on_dictionary(&b).unwrap().is_none());
        assert!(col("d").eval_on_dictionary(&b).unwrap().is_none());
        let lower = col("d").str(functions::StrFunction::Lower);
        assert!(lower.eval_on_dictionary(&b).unwrap().is_none());
        // The two-column predicate still takes its dictionary conjunct by values.
        let want = mixed.evaluate(&plain(&b)).unwrap();
        assert_eq!(mixed.evaluate(&b).unwrap().as_ref(), want.as_ref());
        // Kleene: a null key under `n > 3` is null, under `n <= 3` false.
        let f = Some(false);
        let expected = [f, f, f, f, f, Some(true), f, f, Some(true), None];
        assert_eq!(want.as_boolean().iter().collect::<Vec<_>>(), expected);
    }
}
