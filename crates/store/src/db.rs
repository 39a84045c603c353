//! One SQL interface over the two stores: SQLite (rusqlite) and PostgreSQL (postgres).
//!
//! Statements are written once, in the SQL both engines accept, with `?N` parameters (turned
//! into `$N` for PostgreSQL); where the two differ a caller asks [`Exec::dialect`]. Values go
//! in as [`Val`] and come back as [`Row`]s of [`Cell`]s, so callers never see either driver's
//! types. PostgreSQL statements are prepared once per connection and cached.

use std::collections::HashMap;

use postgres::types::{IsNull, ToSql, Type, to_sql_checked};

/// Which engine a statement runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

/// A parameter.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Val<'a> {
    Int(i64),
    Text(&'a str),
    Blob(&'a [u8]),
    Bool(bool),
    Null,
}

impl From<i64> for Val<'_> {
    fn from(v: i64) -> Self {
        Val::Int(v)
    }
}
impl From<u32> for Val<'_> {
    fn from(v: u32) -> Self {
        Val::Int(i64::from(v))
    }
}
impl From<bool> for Val<'_> {
    fn from(v: bool) -> Self {
        Val::Bool(v)
    }
}
impl<'a> From<&'a str> for Val<'a> {
    fn from(v: &'a str) -> Self {
        Val::Text(v)
    }
}
impl<'a> From<&'a String> for Val<'a> {
    fn from(v: &'a String) -> Self {
        Val::Text(v)
    }
}
impl<'a> From<&'a [u8]> for Val<'a> {
    fn from(v: &'a [u8]) -> Self {
        Val::Blob(v)
    }
}
impl<'a, T: Into<Val<'a>>> From<Option<T>> for Val<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Val::Null, Into::into)
    }
}

/// `[Val]` from a list of values of different types.
macro_rules! vals {
    ($($v:expr),* $(,)?) => { [$($crate::db::Val::from($v)),*] };
}
pub(crate) use vals;

/// One value of a result row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    Null,
    Int(i64),
    Text(String),
    Blob(Vec<u8>),
}

/// What went wrong running a statement.
#[derive(Debug)]
pub(crate) enum DbError {
    Sqlite(rusqlite::Error),
    Postgres(postgres::Error),
    /// A value could not be encoded or decoded (a stored snapshot).
    Codec(String),
    /// A column held another type than the caller expected.
    Type {
        column: usize,
        wanted: &'static str,
    },
    /// A leader's write refused by its fence: another recorder leads now (`crate::lead`).
    Fenced(String),
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbError::Sqlite(e) => write!(f, "{e}"),
            DbError::Postgres(e) => write!(f, "{}", crate::pg::error_text(e)),
            DbError::Codec(e) | DbError::Fenced(e) => write!(f, "{e}"),
            DbError::Type { column, wanted } => {
                write!(f, "column {column} is not {wanted}")
            }
        }
    }
}

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> Self {
        DbError::Sqlite(e)
    }
}
impl From<postgres::Error> for DbError {
    fn from(e: postgres::Error) -> Self {
        DbError::Postgres(e)
    }
}

/// A result row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row(pub(crate) Vec<Cell>);

impl Row {
    fn cell(&self, i: usize) -> &Cell {
        self.0.get(i).unwrap_or(&Cell::Null)
    }
    pub(crate) fn opt_int(&self, i: usize) -> Result<Option<i64>, DbError> {
        match self.cell(i) {
            Cell::Null => Ok(None),
            Cell::Int(v) => Ok(Some(*v)),
            _ => Err(DbError::Type {
                column: i,
                wanted: "an integer",
            }),
        }
    }
    pub(crate) fn int(&self, i: usize) -> Result<i64, DbError> {
        self.opt_int(i)?.ok_or(DbError::Type {
            column: i,
            wanted: "a non-null integer",
        })
    }
    pub(crate) fn u32(&self, i: usize) -> Result<u32, DbError> {
        u32::try_from(self.int(i)?).map_err(|_| DbError::Type {
            column: i,
            wanted: "an integer within u32",
        })
    }
    pub(crate) fn opt_u32(&self, i: usize) -> Result<Option<u32>, DbError> {
        Ok(self.opt_int(i)?.and_then(|v| u32::try_from(v).ok()))
    }
    pub(crate) fn boolean(&self, i: usize) -> Result<bool, DbError> {
        Ok(self.int(i)? != 0)
    }
    pub(crate) fn opt_text(&self, i: usize) -> Result<Option<String>, DbError> {
        match self.cell(i) {
            Cell::Null => Ok(None),
            Cell::Text(s) => Ok(Some(s.clone())),
            _ => Err(DbError::Type {
                column: i,
                wanted: "text",
            }),
        }
    }
    pub(crate) fn text(&self, i: usize) -> Result<String, DbError> {
        self.opt_text(i)?.ok_or(DbError::Type {
            column: i,
            wanted: "non-null text",
        })
    }
    pub(crate) fn blob(&self, i: usize) -> Result<Vec<u8>, DbError> {
        match self.cell(i) {
            Cell::Blob(b) => Ok(b.clone()),
            _ => Err(DbError::Type {
                column: i,
                wanted: "a blob",
            }),
        }
    }
}

/// Runs statements: a connection or a transaction of either engine.
pub(crate) trait Exec {
    /// Runs one statement; returns the rows it changed.
    fn exec(&mut self, sql: &str, params: &[Val<'_>]) -> Result<usize, DbError>;
    /// Runs one query; returns its rows.
    fn rows(&mut self, sql: &str, params: &[Val<'_>]) -> Result<Vec<Row>, DbError>;
    /// Runs several statements without parameters.
    fn batch(&mut self, sql: &str) -> Result<(), DbError>;

    /// The first row, if any.
    fn row(&mut self, sql: &str, params: &[Val<'_>]) -> Result<Option<Row>, DbError> {
        Ok(self.rows(sql, params)?.into_iter().next())
    }
}

// ---- SQLite ----

impl rusqlite::ToSql for Val<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match *self {
            Val::Int(v) => ValueRef::Integer(v),
            Val::Text(s) => ValueRef::Text(s.as_bytes()),
            Val::Blob(b) => ValueRef::Blob(b),
            Val::Bool(b) => ValueRef::Integer(i64::from(b)),
            Val::Null => ValueRef::Null,
        }))
    }
}

fn sqlite_rows(
    conn: &rusqlite::Connection,
    sql: &str,
    params: &[Val<'_>],
) -> Result<Vec<Row>, DbError> {
    use rusqlite::types::ValueRef;
    let mut stmt = conn.prepare_cached(sql)?;
    let n = stmt.column_count();
    let rows = stmt.query_map(rusqlite::params_from_iter(params.iter()), |r| {
        let mut cells = Vec::with_capacity(n);
        for i in 0..n {
            cells.push(match r.get_ref(i)? {
                ValueRef::Null => Cell::Null,
                ValueRef::Integer(v) => Cell::Int(v),
                // No column of ours is REAL; a float is read as its integer part.
                ValueRef::Real(v) => Cell::Int(v as i64),
                ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => Cell::Blob(b.to_vec()),
            });
        }
        Ok(Row(cells))
    })?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

impl Exec for rusqlite::Connection {
    fn exec(&mut self, sql: &str, params: &[Val<'_>]) -> Result<usize, DbError> {
        let mut stmt = self.prepare_cached(sql)?;
        Ok(stmt.execute(rusqlite::params_from_iter(params.iter()))?)
    }
    fn rows(&mut self, sql: &str, params: &[Val<'_>]) -> Result<Vec<Row>, DbError> {
        sqlite_rows(self, sql, params)
    }
    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        Ok(self.execute_batch(sql)?)
    }
}

impl Exec for rusqlite::Transaction<'_> {
    fn exec(&mut self, sql: &str, params: &[Val<'_>]) -> Result<usize, DbError> {
        let mut stmt = self.prepare_cached(sql)?;
        Ok(stmt.execute(rusqlite::params_from_iter(params.iter()))?)
    }
    fn rows(&mut self, sql: &str, params: &[Val<'_>]) -> Result<Vec<Row>, DbError> {
        sqlite_rows(self, sql, params)
    }
    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        Ok(self.execute_batch(sql)?)
    }
}

// ---- PostgreSQL ----

impl ToSql for Val<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            Val::Null => Ok(IsNull::Yes),
            Val::Int(v) => match *ty {
                Type::INT2 => i16::try_from(v)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(v)?.to_sql(ty, out),
                Type::BOOL => (v != 0).to_sql(ty, out),
                _ => v.to_sql(ty, out),
            },
            Val::Text(s) => s.to_sql(ty, out),
            Val::Blob(b) => b.to_sql(ty, out),
            Val::Bool(b) => match *ty {
                Type::INT2 | Type::INT4 | Type::INT8 => i64::from(b).to_sql(&Type::INT8, out),
                _ => b.to_sql(ty, out),
            },
        }
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// `?N` placeholders as PostgreSQL's `$N`.
pub(crate) fn pg_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

fn pg_cell(row: &postgres::Row, i: usize) -> Result<Cell, postgres::Error> {
    let ty = row.columns()[i].type_().clone();
    Ok(match ty {
        Type::INT8 => row
            .try_get::<_, Option<i64>>(i)?
            .map_or(Cell::Null, Cell::Int),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(i)?
            .map_or(Cell::Null, |v| Cell::Int(i64::from(v))),
        Type::INT2 => row
            .try_get::<_, Option<i16>>(i)?
            .map_or(Cell::Null, |v| Cell::Int(i64::from(v))),
        Type::BOOL => row
            .try_get::<_, Option<bool>>(i)?
            .map_or(Cell::Null, |v| Cell::Int(i64::from(v))),
        Type::BYTEA => row
            .try_get::<_, Option<Vec<u8>>>(i)?
            .map_or(Cell::Null, Cell::Blob),
        _ => row
            .try_get::<_, Option<String>>(i)?
            .map_or(Cell::Null, Cell::Text),
    })
}

/// Statements prepared on one PostgreSQL connection, by their SQL.
pub(crate) type StmtCache = HashMap<String, postgres::Statement>;

/// A PostgreSQL connection or transaction with its statement cache.
pub(crate) struct Pg<'a, C: postgres::GenericClient> {
    pub(crate) client: &'a mut C,
    pub(crate) stmts: &'a mut StmtCache,
}

impl<C: postgres::GenericClient> Pg<'_, C> {
    fn stmt(&mut self, sql: &str) -> Result<postgres::Statement, DbError> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(&pg_sql(sql))?;
        self.stmts.insert(sql.to_string(), s.clone());
        Ok(s)
    }
}

fn pg_params<'v>(params: &'v [Val<'_>]) -> Vec<&'v (dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

impl<C: postgres::GenericClient> Exec for Pg<'_, C> {
    fn exec(&mut self, sql: &str, params: &[Val<'_>]) -> Result<usize, DbError> {
        let stmt = self.stmt(sql)?;
        let n = self.client.execute(&stmt, &pg_params(params))?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }
    fn rows(&mut self, sql: &str, params: &[Val<'_>]) -> Result<Vec<Row>, DbError> {
        let stmt = self.stmt(sql)?;
        let rows = self.client.query(&stmt, &pg_params(params))?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let cells = (0..r.len())
                .map(|i| pg_cell(r, i))
                .collect::<Result<Vec<_>, _>>()?;
            out.push(Row(cells));
        }
        Ok(out)
    }
    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        Ok(self.client.batch_execute(sql)?)
    }
}

/// An open connection of either engine: what the journal (and the audit log in PostgreSQL)
/// holds. Behind a mutex so readers can take `&self`; one user at a time.
pub(crate) enum Conn {
    Sqlite(rusqlite::Connection),
    Postgres(Box<PgConn>),
}

/// A PostgreSQL client from the [`crate::pg::Pool`], given back to it when dropped.
pub(crate) struct PgConn {
    pub(crate) client: Option<postgres::Client>,
    pub(crate) stmts: StmtCache,
    pub(crate) url: crate::pg::StoreUrl,
}

impl Drop for PgConn {
    fn drop(&mut self) {
        if let Some(c) = self.client.take() {
            let (url, stmts) = (self.url.clone(), std::mem::take(&mut self.stmts));
            // Dropping a client (when the pool is full) drops its runtime, which tokio
            // forbids on an async worker: then it is given back from a thread of its own.
            if in_runtime() {
                let _ = std::thread::Builder::new()
                    .name("store-pool".into())
                    .spawn(move || crate::pg::Pool::put(&url, c, stmts));
            } else {
                crate::pg::Pool::put(&url, c, stmts);
            }
        }
    }
}

/// Whether this thread runs inside a tokio runtime.
fn in_runtime() -> bool {
    tokio::runtime::Handle::try_current().is_ok()
}

/// Runs `f` here, or on a thread of its own when this thread is inside a tokio runtime: the
/// PostgreSQL client is blocking (it drives its own runtime), which tokio refuses inside
/// another one. So the journal works the same from a command's async code, a
/// `spawn_blocking` task or a plain thread.
///
/// Waiting for that thread on an async worker would stall the worker's other tasks (a
/// console's drawing, a recorder's event intake) for the whole call, so on a multi-threaded
/// runtime the wait is `block_in_place`: tokio hands the worker's other tasks to another
/// thread first (on a blocking thread it only runs the wait).
pub(crate) fn off_runtime<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return f();
    };
    let wait = || {
        std::thread::scope(|s| match s.spawn(f).join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        })
    };
    match handle.runtime_flavor() {
        tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(wait),
        _ => wait(),
    }
}

/// A closed client: only after [`PgConn`] was dropped, which never runs a statement.
fn gone() -> DbError {
    DbError::Type {
        column: 0,
        wanted: "an open connection",
    }
}

impl Conn {
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            Conn::Sqlite(_) => Dialect::Sqlite,
            Conn::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Runs `f` on the connection, outside any transaction.
    pub(crate) fn with<R: Send>(
        &mut self,
        f: impl FnOnce(&mut dyn Exec) -> Result<R, DbError> + Send,
    ) -> Result<R, DbError> {
        match self {
            Conn::Sqlite(c) => f(c),
            Conn::Postgres(p) => off_runtime(|| {
                let client = p.client.as_mut().ok_or_else(gone)?;
                f(&mut Pg {
                    client,
                    stmts: &mut p.stmts,
                })
            }),
        }
    }

    /// Runs `f` in one transaction, committed when it returns `Ok`, rolled back otherwise.
    /// SQLite's is IMMEDIATE: it takes the write lock up front, waiting out another writer
    /// (busy timeout); a deferred one that reads before it writes gets SQLITE_BUSY at once
    /// when another process wrote in between.
    pub(crate) fn transaction<R: Send>(
        &mut self,
        f: impl FnOnce(&mut dyn Exec) -> Result<R, DbError> + Send,
    ) -> Result<R, DbError> {
        match self {
            Conn::Sqlite(c) => {
                let mut tx =
                    c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                let r = f(&mut tx)?;
                tx.commit()?;
                Ok(r)
            }
            Conn::Postgres(p) => off_runtime(|| {
                let client = p.client.as_mut().ok_or_else(gone)?;
                let mut tx = client.transaction()?;
                let r = f(&mut Pg {
                    client: &mut tx,
                    stmts: &mut p.stmts,
                })?;
                tx.commit()?;
                Ok(r)
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long blocking call made from an async worker leaves the worker's other tasks running:
    /// with one worker, a ticking task goes on ticking while the call waits.
    #[test]
    fn a_blocking_call_on_a_worker_does_not_stall_its_other_tasks() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_time()
            .build()
            .unwrap();
        let ticks = rt.block_on(async {
            let ticks = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let t = std::sync::Arc::clone(&ticks);
            let ticker = tokio::spawn(async move {
                loop {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    t.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            });
            tokio::task::yield_now().await;
            let during = tokio::spawn(async move {
                let before = ticks.load(std::sync::atomic::Ordering::SeqCst);
                off_runtime(|| std::thread::sleep(std::time::Duration::from_millis(400)));
                ticks.load(std::sync::atomic::Ordering::SeqCst) - before
            })
            .await
            .unwrap();
            ticker.abort();
            during
        });
        assert!(ticks >= 10, "the other task ticked {ticks} times in 400 ms");
    }

    #[test]
    fn off_a_runtime_and_on_a_current_thread_one_the_call_still_runs() {
        assert_eq!(off_runtime(|| 7), 7);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(async { off_runtime(|| 8) }), 8);
    }

    #[test]
    fn placeholders_become_dollar_numbers() {
        assert_eq!(
            pg_sql("SELECT ?1, ?12 WHERE a = '?' AND b = ?2"),
            "SELECT $1, $12 WHERE a = '?' AND b = $2"
        );
    }

    #[test]
    fn sqlite_round_trip_of_every_value_kind() {
        let mut c = rusqlite::Connection::open_in_memory().unwrap();
        c.batch("CREATE TABLE t (i INTEGER, s TEXT, b BLOB, f INTEGER, n INTEGER)")
            .unwrap();
        let blob: &[u8] = &[1, 2, 3];
        c.exec(
            "INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5)",
            &vals![7i64, "x", blob, true, None::<i64>],
        )
        .unwrap();
        let r = c.row("SELECT * FROM t", &[]).unwrap().unwrap();
        assert_eq!(r.int(0).unwrap(), 7);
        assert_eq!(r.text(1).unwrap(), "x");
        assert_eq!(r.blob(2).unwrap(), blob);
        assert!(r.boolean(3).unwrap());
        assert_eq!(r.opt_int(4).unwrap(), None);
        assert!(r.text(0).is_err());
    }
}
