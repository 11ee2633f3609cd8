//! `hermes_rank`: the FTS5 auxiliary function search ranks with — bm25 without the full walk.
//!
//! FTS5's own `bm25()` weighs each phrase of the query by its IDF, and to get it counts every
//! row of the table that holds the phrase (`xQueryPhrase` over the whole doclist) before it can
//! score the first row. For a common word or a phrase of common words that walk alone costs
//! tens of milliseconds on a million messages, whatever LIMIT the query has. `hermes_rank`
//! computes the same score (k1 = 1.2, b = 0.75, the same sign: lower is better) with two
//! changes to how the IDF is found:
//! - a query of one phrase needs no IDF at all: it multiplies every row's score by the same
//!   constant, so the order is bm25's without counting anything;
//! - with several phrases, each phrase's document count is exact up to [`IDF_SAMPLE`] hits
//!   (the same figure bm25 uses) and past that estimated from how densely the first
//!   `IDF_SAMPLE` hits sit in the row-id range `lo..=hi` passed by the caller, so the walk
//!   stops early.
//!
//! The function is registered per connection through the `fts5_api` pointer (SQLite's
//! documented `SELECT fts5(?1)` handshake); [`ensure`] does it once per connection and reports
//! whether it is available, so callers fall back to `bm25()` if it is not.

use std::ffi::{c_int, c_void};
use std::ptr;

use rusqlite::Connection;
use rusqlite::ffi;

/// SQL name of the ranking function.
pub(crate) const NAME: &str = "hermes_rank";
/// Hits of one phrase counted exactly before its document count is estimated.
pub(crate) const IDF_SAMPLE: i64 = 500;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Makes `hermes_rank` available on `conn`; false when it could not be (the caller then ranks
/// with `bm25()`). Cheap when already registered: one statement preparation.
pub(crate) fn ensure(conn: &Connection) -> bool {
    if conn
        .prepare(&format!("SELECT {NAME}(0)"))
        .map(|_| ())
        .is_ok()
    {
        return true;
    }
    match register(conn) {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(error = %e, "could not register {NAME}; search ranks with bm25()");
            false
        }
    }
}

/// Why registration failed (only logged: search still works with `bm25()`).
#[derive(Debug, thiserror::Error)]
enum RegisterError {
    #[error("SQLite gave no fts5_api pointer (FTS5 not compiled in?)")]
    NoApi,
    #[error("SQLite refused `{step}` with code {code}")]
    Sqlite { step: &'static str, code: c_int },
}

fn register(conn: &Connection) -> Result<(), RegisterError> {
    let api = fts5_api(conn)?;
    let name = c"hermes_rank";
    // SAFETY: `api` was just handed out by this connection's FTS5 module and lives as long as
    // the connection; the callback is a plain `extern "C" fn` with no user data.
    let rc = unsafe {
        match (*api).xCreateFunction {
            Some(create) => create(api, name.as_ptr(), ptr::null_mut(), Some(rank), None),
            None => return Err(RegisterError::NoApi),
        }
    };
    if rc != ffi::SQLITE_OK {
        return Err(RegisterError::Sqlite {
            step: "xCreateFunction",
            code: rc,
        });
    }
    Ok(())
}

/// The connection's `fts5_api`, obtained as SQLite documents it: bind a pointer of type
/// `fts5_api_ptr` to `SELECT fts5(?1)` and step once.
fn fts5_api(conn: &Connection) -> Result<*mut ffi::fts5_api, RegisterError> {
    let mut api: *mut ffi::fts5_api = ptr::null_mut();
    let mut stmt: *mut ffi::sqlite3_stmt = ptr::null_mut();
    let sql = c"SELECT fts5(?1)";
    // SAFETY: the handle is valid while `conn` is borrowed; `stmt` is finalized on every path;
    // `api` outlives the statement that writes through the bound pointer.
    unsafe {
        let db = conn.handle();
        let rc = ffi::sqlite3_prepare_v2(db, sql.as_ptr(), -1, &mut stmt, ptr::null_mut());
        if rc != ffi::SQLITE_OK {
            ffi::sqlite3_finalize(stmt);
            return Err(RegisterError::Sqlite {
                step: "prepare SELECT fts5(?1)",
                code: rc,
            });
        }
        let rc = ffi::sqlite3_bind_pointer(
            stmt,
            1,
            (&mut api as *mut *mut ffi::fts5_api).cast::<c_void>(),
            c"fts5_api_ptr".as_ptr(),
            None,
        );
        if rc != ffi::SQLITE_OK {
            ffi::sqlite3_finalize(stmt);
            return Err(RegisterError::Sqlite {
                step: "bind fts5_api_ptr",
                code: rc,
            });
        }
        ffi::sqlite3_step(stmt);
        ffi::sqlite3_finalize(stmt);
    }
    if api.is_null() {
        return Err(RegisterError::NoApi);
    }
    Ok(api)
}

/// What one query computes once: per-phrase IDF and the table's mean row length.
struct QueryData {
    idf: Vec<f64>,
    avgdl: f64,
    freq: Vec<f64>,
}

/// Counting state for [`count_hit`].
struct Count {
    hits: i64,
    last_rowid: i64,
}

unsafe extern "C" fn count_hit(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    user: *mut c_void,
) -> c_int {
    // SAFETY: `user` is the `Count` passed to xQueryPhrase below, alive for the whole call.
    let count = unsafe { &mut *user.cast::<Count>() };
    count.hits += 1;
    // SAFETY: `api` and `fts` are valid inside the callback.
    if let Some(rowid) = unsafe { (*api).xRowid } {
        count.last_rowid = unsafe { rowid(fts) };
    }
    if count.hits >= IDF_SAMPLE {
        ffi::SQLITE_DONE
    } else {
        ffi::SQLITE_OK
    }
}

/// Documents holding `hits` of a phrase, exact when the walk ended before the sample filled,
/// else scaled from the density of the sample over the row ids `lo..=hi`.
pub(crate) fn estimate_docs(hits: i64, last_rowid: i64, lo: i64, hi: i64, exact: bool) -> f64 {
    if exact || hi <= lo || last_rowid < lo {
        return hits as f64;
    }
    let span = (hi - lo + 1) as f64;
    let covered = (last_rowid - lo + 1) as f64;
    hits as f64 * span / covered
}

unsafe fn query_data(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    lo: i64,
    hi: i64,
) -> Result<QueryData, c_int> {
    let call = |rc: c_int| {
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(rc)
        }
    };
    let (Some(phrase_count), Some(row_count), Some(total_size), Some(query_phrase)) = (
        api.xPhraseCount,
        api.xRowCount,
        api.xColumnTotalSize,
        api.xQueryPhrase,
    ) else {
        return Err(ffi::SQLITE_MISUSE);
    };
    // SAFETY (whole block): `fts` is the live context of the current row.
    let phrases = unsafe { phrase_count(fts) }.max(0) as usize;
    let mut rows: i64 = 0;
    let mut tokens: i64 = 0;
    call(unsafe { row_count(fts, &mut rows) })?;
    call(unsafe { total_size(fts, -1, &mut tokens) })?;
    let rows_f = rows.max(1) as f64;
    let mut idf = vec![1.0; phrases];
    if phrases > 1 {
        for (i, slot) in idf.iter_mut().enumerate() {
            let mut count = Count {
                hits: 0,
                last_rowid: lo,
            };
            call(unsafe {
                query_phrase(
                    fts,
                    i as c_int,
                    (&mut count as *mut Count).cast::<c_void>(),
                    Some(count_hit),
                )
            })?;
            let exact = count.hits < IDF_SAMPLE;
            let docs = estimate_docs(count.hits, count.last_rowid, lo, hi, exact).min(rows_f);
            let v = ((rows_f - docs + 0.5) / (docs + 0.5)).ln();
            *slot = if v <= 0.0 { 1e-6 } else { v };
        }
    }
    Ok(QueryData {
        idf,
        avgdl: (tokens as f64 / rows_f).max(1.0),
        freq: vec![0.0; phrases],
    })
}

unsafe extern "C" fn drop_data(p: *mut c_void) {
    // SAFETY: `p` came from `Box::into_raw` in `rank` and SQLite frees it once.
    drop(unsafe { Box::from_raw(p.cast::<QueryData>()) });
}

/// `hermes_rank(fts, lo, hi)`: see the module docs. `lo`/`hi` are the smallest and largest row
/// ids of the table (only used to scale IDF estimates).
unsafe extern "C" fn rank(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    n_val: c_int,
    args: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY (whole function): SQLite calls this with a valid API table, row context, result
    // context and `n_val` argument values.
    let result = unsafe {
        let api = &*api;
        let arg = |i: isize| {
            if (i as c_int) < n_val {
                ffi::sqlite3_value_int64(*args.offset(i))
            } else {
                0
            }
        };
        score(api, fts, arg(0), arg(1))
    };
    match result {
        Ok(score) => unsafe { ffi::sqlite3_result_double(ctx, score) },
        Err(rc) => unsafe { ffi::sqlite3_result_error_code(ctx, rc) },
    }
}

unsafe fn score(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    lo: i64,
    hi: i64,
) -> Result<f64, c_int> {
    let (Some(get_aux), Some(set_aux), Some(inst_count), Some(inst), Some(column_size)) = (
        api.xGetAuxdata,
        api.xSetAuxdata,
        api.xInstCount,
        api.xInst,
        api.xColumnSize,
    ) else {
        return Err(ffi::SQLITE_MISUSE);
    };
    // SAFETY (whole block): `fts` is the live row context; the aux data pointer is ours.
    let mut data = unsafe { get_aux(fts, 0) }.cast::<QueryData>();
    if data.is_null() {
        let fresh = Box::into_raw(Box::new(unsafe { query_data(api, fts, lo, hi) }?));
        let rc = unsafe { set_aux(fts, fresh.cast::<c_void>(), Some(drop_data)) };
        if rc != ffi::SQLITE_OK {
            // SQLite already called `drop_data` on failure.
            return Err(rc);
        }
        data = fresh;
    }
    let data = unsafe { &mut *data };
    data.freq.iter_mut().for_each(|f| *f = 0.0);
    let mut n: c_int = 0;
    let rc = unsafe { inst_count(fts, &mut n) };
    if rc != ffi::SQLITE_OK {
        return Err(rc);
    }
    for i in 0..n {
        let (mut phrase, mut col, mut off) = (0, 0, 0);
        let rc = unsafe { inst(fts, i, &mut phrase, &mut col, &mut off) };
        if rc != ffi::SQLITE_OK {
            return Err(rc);
        }
        if let Some(f) = data.freq.get_mut(phrase as usize) {
            *f += 1.0;
        }
    }
    let mut len: c_int = 0;
    let rc = unsafe { column_size(fts, -1, &mut len) };
    if rc != ffi::SQLITE_OK {
        return Err(rc);
    }
    Ok(bm25(&data.idf, &data.freq, f64::from(len), data.avgdl))
}

/// FTS5's bm25 formula on already known figures (negated: lower ranks first, as `bm25()`).
pub(crate) fn bm25(idf: &[f64], freq: &[f64], len: f64, avgdl: f64) -> f64 {
    let norm = K1 * (1.0 - B + B * len / avgdl);
    -idf.iter()
        .zip(freq)
        .map(|(idf, f)| idf * (f * (K1 + 1.0)) / (f + norm))
        .sum::<f64>()
}

#[cfg(test)]
#[path = "rank_tests.rs"]
mod tests;
