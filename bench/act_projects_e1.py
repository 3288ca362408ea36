"""Action-scenario projects, set e1 (format and rules: action_scenarios.py).

  tollgate   Rust API for an EV charging network: chargers post OCPP-style events over HTTP (axum 0.7, sqlx 0.7 +
             Postgres with compile-time checked queries and an offline .sqlx cache, tokio, cargo-nextest, Stripe over
             reqwest, Docker, moving from Heroku to Fly.io)
  allotment  Server-rendered Go web app for an allotment society: plots, tool-shed bookings, waitlist (Go 1.22
             net/http, templ, htmx, sqlc + pgx, goose, Tailwind standalone CLI, testcontainers-go on colima,
             Kamal 2 on a Hetzner VM)

Each has five earlier sessions (oldest first) that settle decisions, root causes, file locations, commands, config
values, standing rules and error fixes, with look-alike distractors (unit vs db tests, app pool vs test databases,
request timeout vs charger retry window, staging vs prod configs; dev proxy port vs app port, templ vs sqlc
generation, staging vs production destinations) and values that a later session replaces, in files and in words.
The probes: recall questions, noise prompts, and action probes that touch a file or run a command about which
something was learned (or nothing was).
"""
from action_scenarios import A, B, E, F, N, Q, R, S, T, U, W

# ==============================================================================================================
# tollgate -- Rust/axum + sqlx API for the "Voltwerk" charging network (sites in Amsterdam and Utrecht)
# ==============================================================================================================
TG_CI_LOG = """build\tRun cargo build --locked --all-targets\t2024-06-03T08:12:44.1022331Z    Compiling tollgate-core v0.4.0 (/home/runner/work/tollgate/tollgate/crates/core)
build\tRun cargo build --locked --all-targets\t2024-06-03T08:12:51.9082211Z    Compiling tollgate-api v0.4.0 (/home/runner/work/tollgate/tollgate/crates/api)
build\tRun cargo build --locked --all-targets\t2024-06-03T08:12:58.3310452Z error: set `DATABASE_URL` to use query macros online, or run `cargo sqlx prepare` to update the query cache
build\tRun cargo build --locked --all-targets\t2024-06-03T08:12:58.3311007Z   --> crates/api/src/billing/tariff.rs:38:15
build\tRun cargo build --locked --all-targets\t2024-06-03T08:12:58.3311511Z    |
build\tRun cargo build --locked --all-targets\t2024-06-03T08:12:58.3311902Z 38 |       let row = sqlx::query_as!(
build\tRun cargo build --locked --all-targets\t2024-06-03T08:12:58.3390114Z error: set `DATABASE_URL` to use query macros online, or run `cargo sqlx prepare` to update the query cache
build\tRun cargo build --locked --all-targets\t2024-06-03T08:12:58.3390517Z   --> crates/api/src/billing/tariff.rs:61:9
build\tRun cargo build --locked --all-targets\t2024-06-03T08:12:58.4470032Z error: could not compile `tollgate-api` (lib) due to 2 previous errors
build\tRun cargo build --locked --all-targets\t2024-06-03T08:12:58.5124418Z ##[error]Process completed with exit code 101.
"""

TG_OFFLINE_FAIL = """   Compiling tollgate-core v0.4.0 (/home/sam/src/tollgate/crates/core)
   Compiling tollgate-api v0.4.0 (/home/sam/src/tollgate/crates/api)
error: `SQLX_OFFLINE=true` but there is no cached data for this query, run `cargo sqlx prepare` to update the query cache or unset `SQLX_OFFLINE`
  --> crates/api/src/billing/tariff.rs:38:15
   |
38 |       let row = sqlx::query_as!(
   |  _______________^
39 | |         TariffRow,
40 | |         r#"SELECT id, price_per_kwh_cents, session_fee_cents
41 | |            FROM tariffs
...  |
46 | |         site_id
47 | |     )
   | |_____^
   |
   = note: this error originates in the macro `$crate::sqlx_macros::expand_query` which comes from the expansion of the macro `sqlx::query_as` (in Nightly builds, run with -Z macro-backtrace for more info)

error: `SQLX_OFFLINE=true` but there is no cached data for this query, run `cargo sqlx prepare` to update the query cache or unset `SQLX_OFFLINE`
  --> crates/api/src/billing/tariff.rs:61:9
   |
61 |         sqlx::query_scalar!("SELECT currency FROM sites WHERE id = $1", site_id)
   |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = note: this error originates in the macro `$crate::sqlx_macros::expand_query` (in Nightly builds, run with -Z macro-backtrace for more info)

error: could not compile `tollgate-api` (lib) due to 2 previous errors
"""

TG_NEXTEST_FAIL = """    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.44s
    Starting 212 tests across 9 binaries (3 tests skipped)
        PASS [   0.011s] tollgate-core money::tests::adds_cents
        PASS [   0.012s] tollgate-core money::tests::multiplies_by_minutes
        PASS [   0.009s] tollgate-core site::tests::parses_site_code
        FAIL [   1.204s] tollgate-api::sessions stop::records_stop_event
--- STDOUT:              tollgate-api::sessions stop::records_stop_event ---

running 1 test
test stop::records_stop_event ... FAILED

--- STDERR:              tollgate-api::sessions stop::records_stop_event ---
thread 'stop::records_stop_event' panicked at /home/sam/.cargo/registry/src/index.crates.io-6f17d22bba15001f/sqlx-core-0.7.4/src/testing/mod.rs:248:14:
failed to connect to test database: Database(PgDatabaseError { severity: Fatal, code: "53300", message: "sorry, too many clients already", detail: None, hint: None, position: None, where: None, schema: None, table: None, column: None, data_type: None, constraint: None, file: Some("proc.c"), line: Some(359), routine: Some("InitProcess") })
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

        FAIL [   1.311s] tollgate-api::sessions start::rejects_unknown_connector
        FAIL [   1.298s] tollgate-api::billing tariff::picks_site_tariff
        PASS [   2.044s] tollgate-api::sessions start::opens_session
------------
     Summary [  14.882s] 212 tests run: 171 passed, 41 failed, 3 skipped
        FAIL [   1.204s] tollgate-api::sessions stop::records_stop_event
        FAIL [   1.311s] tollgate-api::sessions start::rejects_unknown_connector
        FAIL [   1.298s] tollgate-api::billing tariff::picks_site_tariff
        ... 38 more
error: test run failed
"""

TG_NEXTEST_TOML = """# cargo-nextest configuration (https://nexte.st)

[test-groups]
# every #[sqlx::test] creates its own database plus a pool; running 16 of them at once exhausts
# the compose postgres (max_connections = 100)
db = { max-threads = 4 }

[[profile.default.overrides]]
filter = 'rdeps(sqlx) & kind(test) | test(/::db::/)'
test-group = 'db'

[profile.ci]
fail-fast = false
retries = 0
"""

TG_DB_RS = """use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

use crate::config::Config;

pub async fn connect(cfg: &Config) -> anyhow::Result<PgPool> {
    let opts: PgConnectOptions = cfg.database_url.parse()?;
    let pool = PgPoolOptions::new()
        .max_connections(10)
        .acquire_timeout(Duration::from_secs(3))
        .connect_with(opts.application_name("tollgate-api"))
        .await?;
    Ok(pool)
}
"""

TG_MAIN_RS = """use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use tower_http::{timeout::TimeoutLayer, trace::TraceLayer};
use tracing_subscriber::EnvFilter;

mod auth;
mod billing;
mod config;
mod db;
mod error;
mod routes;
mod sessions;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "tollgate_api=info".into()))
        .json()
        .init();

    let cfg = config::Config::from_env()?;
    let pool = db::connect(&cfg).await?;
    if std::env::args().nth(1).as_deref() == Some("migrate") {
        sqlx::migrate!("../../migrations").run(&pool).await?;
        return Ok(());
    }
    let state = routes::AppState::new(pool, &cfg);

    let app = Router::new()
        .merge(routes::charger::router())
        .merge(routes::driver::router())
        .with_state(state)
        .layer(TraceLayer::new_for_http())
        .layer(TimeoutLayer::new(Duration::from_secs(30)));

    let addr = SocketAddr::from(([0, 0, 0, 0], cfg.port));
    tracing::info!(%addr, "listening");
    let listener = tokio::net::TcpListener::bind(addr).await?;
    axum::serve(listener, app).await?;
    Ok(())
}
"""

TG_STOP_HANDLER_RS = """use axum::{extract::State, http::StatusCode};

use crate::auth::charger_sig::Signed;
use crate::billing;
use crate::error::AppError;
use crate::routes::AppState;
use crate::sessions::{repo, StopTransactionReq};

/// POST /ocpp/stop -- the charger reports the end of a transaction.
pub async fn stop_transaction(
    State(state): State<AppState>,
    Signed(charger_id, req): Signed<StopTransactionReq>,
) -> Result<StatusCode, AppError> {
    let session = repo::find_open_session(&state.db, &charger_id, req.transaction_id)
        .await?
        .ok_or(AppError::NotFound("session"))?;
    repo::insert_stop_event(&state.db, &charger_id, &req).await?;
    let amount = billing::tariff::price_session(&state.db, &session, req.meter_stop_wh).await?;
    state.stripe.charge(&session.driver_id, amount, &session.id).await?;
    repo::close_session(&state.db, session.id, req.timestamp, amount).await?;
    Ok(StatusCode::OK)
}
"""

TG_REPO_INSERT_OLD = """pub async fn insert_stop_event(db: &PgPool, charger_id: &str, req: &StopTransactionReq) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO stop_events (charger_id, transaction_id, meter_stop_wh, reason, reported_at)
         VALUES ($1, $2, $3, $4, $5)",
        charger_id,
        req.transaction_id,
        req.meter_stop_wh,
        req.reason.as_deref(),
        req.timestamp,
    )
    .execute(db)
    .await?;
    Ok(())
}"""

TG_REPO_INSERT_NEW = """/// Returns None when this (charger, transaction) stop was already recorded: chargers resend stops.
pub async fn insert_stop_event(
    tx: &mut PgConnection,
    charger_id: &str,
    req: &StopTransactionReq,
) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar!(
        "INSERT INTO stop_events (charger_id, transaction_id, meter_stop_wh, reason, reported_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (charger_id, transaction_id) DO NOTHING
         RETURNING id",
        charger_id,
        req.transaction_id,
        req.meter_stop_wh,
        req.reason.as_deref(),
        req.timestamp,
    )
    .fetch_optional(&mut *tx)
    .await
}"""

TG_SESSIONS_MIGRATION = """CREATE TABLE charging_sessions (
    id              BIGSERIAL PRIMARY KEY,
    charger_id      TEXT        NOT NULL,
    connector_id    INT         NOT NULL,
    transaction_id  BIGINT      NOT NULL,
    driver_id       BIGINT      NOT NULL REFERENCES drivers (id),
    site_id         BIGINT      NOT NULL REFERENCES sites (id),
    meter_start_wh  BIGINT      NOT NULL,
    started_at      TIMESTAMPTZ NOT NULL,
    stopped_at      TIMESTAMPTZ,
    amount_cents    BIGINT
);

CREATE TABLE stop_events (
    id              BIGSERIAL PRIMARY KEY,
    charger_id      TEXT        NOT NULL,
    transaction_id  BIGINT      NOT NULL,
    meter_stop_wh   BIGINT      NOT NULL,
    reason          TEXT,
    reported_at     TIMESTAMPTZ NOT NULL,
    received_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX charging_sessions_open ON charging_sessions (charger_id, transaction_id) WHERE stopped_at IS NULL;
"""

TG_DUP_STOPS = """ charger_id  | transaction_id | n |   first_recv    |    last_recv    | amount_cents
-------------+----------------+---+-----------------+-----------------+--------------
 ALF-PB-0117 |          88412 | 2 | 09:41:12.032+02 | 09:41:17.118+02 |         1874
 ALF-PB-0117 |          88431 | 2 | 11:02:40.501+02 | 11:02:45.622+02 |         2210
 ALF-PB-0121 |          51007 | 2 | 17:15:03.277+02 | 17:15:08.390+02 |          962
 ALF-PB-0104 |          60219 | 2 | 18:40:56.013+02 | 18:41:01.147+02 |         3318
 ALF-PB-0121 |          51032 | 2 | 19:22:19.884+02 | 19:22:24.960+02 |         1405
(5 rows)
"""

TG_HEROKU_LOGS = """2024-06-05T09:41:17.102311+00:00 app[web.2]: {"timestamp":"2024-06-05T09:41:17.101Z","level":"INFO","fields":{"message":"finished processing request","latency":"6204 ms","status":200},"target":"tower_http::trace::on_response","span":{"method":"POST","uri":"/ocpp/stop","name":"request"}}
2024-06-05T09:41:19.877102+00:00 app[web.1]: {"timestamp":"2024-06-05T09:41:19.876Z","level":"INFO","fields":{"message":"finished processing request","latency":"2761 ms","status":200},"target":"tower_http::trace::on_response","span":{"method":"POST","uri":"/ocpp/stop","name":"request"}}
2024-06-05T11:02:46.401977+00:00 app[web.1]: {"timestamp":"2024-06-05T11:02:46.401Z","level":"INFO","fields":{"message":"finished processing request","latency":"5899 ms","status":200},"target":"tower_http::trace::on_response","span":{"method":"POST","uri":"/ocpp/stop","name":"request"}}
2024-06-05T11:02:49.310045+00:00 app[web.2]: {"timestamp":"2024-06-05T11:02:49.309Z","level":"INFO","fields":{"message":"finished processing request","latency":"3687 ms","status":200},"target":"tower_http::trace::on_response","span":{"method":"POST","uri":"/ocpp/stop","name":"request"}}
"""

TG_MONEY_RS = """//! Money is an integer number of euro cents. No floating point anywhere near prices.
use std::ops::{Add, Mul};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, serde::Serialize, serde::Deserialize, sqlx::Type)]
#[sqlx(transparent)]
pub struct Cents(pub i64);

impl Add for Cents {
    type Output = Cents;
    fn add(self, rhs: Cents) -> Cents {
        Cents(self.0 + rhs.0)
    }
}

impl Mul<i64> for Cents {
    type Output = Cents;
    fn mul(self, rhs: i64) -> Cents {
        Cents(self.0 * rhs)
    }
}
"""

TG_TARIFF_RS = """use sqlx::PgPool;
use tollgate_core::money::Cents;

use crate::sessions::ChargingSession;

pub struct TariffRow {
    pub id: i64,
    pub price_per_kwh_cents: Cents,
    pub session_fee_cents: Cents,
}

pub async fn price_session(db: &PgPool, s: &ChargingSession, meter_stop_wh: i64) -> sqlx::Result<Cents> {
    let row = sqlx::query_as!(
        TariffRow,
        r#"SELECT id, price_per_kwh_cents AS "price_per_kwh_cents: Cents", session_fee_cents AS "session_fee_cents: Cents"
           FROM tariffs
           WHERE site_id = $1 AND valid_from <= now()
           ORDER BY valid_from DESC
           LIMIT 1"#,
        s.site_id
    )
    .fetch_one(db)
    .await?;
    let wh = meter_stop_wh - s.meter_start_wh;
    // round up to the next started kWh tenth, never in the driver's disfavour by more than 0.1 kWh
    let tenths = (wh + 99) / 100;
    Ok(row.session_fee_cents + Cents((row.price_per_kwh_cents.0 * tenths + 9) / 10))
}
"""

TG_IDLE_FEE_RS = """//! Idle fees: a car that stays plugged in after it stopped drawing power blocks the charger for others.
use chrono::{DateTime, Utc};
use tollgate_core::money::Cents;

pub const IDLE_GRACE_MINUTES: i64 = 15;
pub const IDLE_FEE_PER_MIN: Cents = Cents(40);
pub const IDLE_FEE_CAP_CENTS: Cents = Cents(1200);

/// `idle_since`: when the connector first reported SuspendedEV during the transaction (the car is full or
/// stopped drawing power). None = the car charged until the driver stopped the session.
pub fn idle_fee(idle_since: Option<DateTime<Utc>>, stopped_at: DateTime<Utc>) -> Cents {
    let Some(since) = idle_since else { return Cents(0) };
    let billable = (stopped_at - since).num_minutes() - IDLE_GRACE_MINUTES;
    if billable <= 0 {
        return Cents(0);
    }
    (IDLE_FEE_PER_MIN * billable).min(IDLE_FEE_CAP_CENTS)
}
"""

TG_DOCKERFILE = """# syntax=docker/dockerfile:1.7
FROM rust:1.79-bookworm AS builder
WORKDIR /src
COPY . .
ENV SQLX_OFFLINE=true
RUN --mount=type=cache,target=/usr/local/cargo/registry \\
    --mount=type=cache,target=/src/target \\
    cargo build --release --locked -p tollgate-api && \\
    cp target/release/tollgate-api /tollgate-api

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=builder /tollgate-api /usr/local/bin/tollgate-api
ENV PORT=3000
EXPOSE 3000
CMD ["/usr/local/bin/tollgate-api"]
"""

TG_DOCKER_BUILD_OK = """#0 building with "desktop-linux" instance using docker driver
#5 [builder 1/4] FROM docker.io/library/rust:1.79-bookworm@sha256:4c45f61ebe054560190f232b7d883f174ff287e1a0972c8f6d7ab88da0188870
#9 [builder 4/4] RUN --mount=type=cache,target=/usr/local/cargo/registry     --mount=type=cache,target=/src/target     cargo build --release --locked -p tollgate-api &&     cp target/release/tollgate-api /tollgate-api
#9 212.4     Finished `release` profile [optimized] target(s) in 3m 31s
#11 [stage-1 3/3] COPY --from=builder /tollgate-api /usr/local/bin/tollgate-api
#12 exporting to image
#12 naming to docker.io/library/tollgate-api:dev done
"""

TG_CARGO_TREE_SSL = """openssl-sys v0.9.102
\u2514\u2500\u2500 openssl v0.10.64
    \u2514\u2500\u2500 native-tls v0.2.12
        \u251c\u2500\u2500 hyper-tls v0.6.0
        \u2502   \u2514\u2500\u2500 reqwest v0.12.4
        \u2502       \u2514\u2500\u2500 tollgate-api v0.4.0 (/home/sam/src/tollgate/crates/api)
        \u251c\u2500\u2500 reqwest v0.12.4 (*)
        \u2514\u2500\u2500 tokio-native-tls v0.3.1
            \u251c\u2500\u2500 hyper-tls v0.6.0 (*)
            \u2514\u2500\u2500 reqwest v0.12.4 (*)
"""

TG_CHARGER_SIG_RS = """//! HMAC-SHA256 signatures on charger webhooks. Headers: X-Tollgate-Charger (charger id) and
//! X-Tollgate-Signature (hex digest of the request body, keyed with the charger's secret).
use axum::{async_trait, extract::{FromRequest, Request}, http::StatusCode, Json};
use hmac::{Hmac, Mac};
use serde::{de::DeserializeOwned, Serialize};
use sha2::Sha256;

use crate::routes::AppState;

/// (charger id, payload) of a request whose signature checked out.
pub struct Signed<T>(pub String, pub T);

#[async_trait]
impl<T: DeserializeOwned + Serialize> FromRequest<AppState> for Signed<T> {
    type Rejection = StatusCode;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let charger_id = header(&req, "x-tollgate-charger")?;
        let sig = header(&req, "x-tollgate-signature")?;
        let Json(payload) = Json::<T>::from_request(req, state).await.map_err(|_| StatusCode::BAD_REQUEST)?;
        let secret = state.charger_secrets.get(&charger_id).ok_or(StatusCode::UNAUTHORIZED)?;
        let body = serde_json::to_vec(&payload).map_err(|_| StatusCode::BAD_REQUEST)?;
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("hmac takes any key length");
        mac.update(&body);
        let expected = hex::decode(&sig).map_err(|_| StatusCode::UNAUTHORIZED)?;
        mac.verify_slice(&expected).map_err(|_| StatusCode::UNAUTHORIZED)?;
        Ok(Signed(charger_id, payload))
    }
}

fn header(req: &Request, name: &str) -> Result<String, StatusCode> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or(StatusCode::UNAUTHORIZED)
}
"""

TG_FLY_PROD_TOML = """app = "tollgate-prod"
primary_region = "ams"

[build]
  dockerfile = "Dockerfile"

[deploy]
  release_command = "/usr/local/bin/tollgate-api migrate"
  strategy = "rolling"

[env]
  PORT = "3000"
  RUST_LOG = "tollgate_api=info,tower_http=info"

[http_service]
  internal_port = 3000
  force_https = true
  auto_stop_machines = false
  min_machines_running = 2

[[vm]]
  size = "shared-cpu-2x"
  memory = "512mb"
"""

TG_FLY_RELEASES = """VERSION\tSTATUS  \tDESCRIPTION\tUSER              \tDATE
v42    \tcomplete\tRelease    \tsam@voltwerk.nl   \t19h50m ago
v41    \tcomplete\tRelease    \tsam@voltwerk.nl   \t20h3m ago
v40    \tcomplete\tRelease    \tci@voltwerk.nl    \t1d2h ago
"""

TG_FLY_LOGS_502 = """2024-06-10T14:03:11Z proxy[e784966f1d2d89] ams [error] [PC01] instance refused connection. is your app listening on 0.0.0.0:3000? make sure it is not only listening on 127.0.0.1 (hint: look at your startup logs, servers often print the address they are listening on)
2024-06-10T14:03:11Z proxy[3d8d9e7f1e2d89] ams [error] [PR04] could not find a good candidate within 40 attempts at load balancing
2024-06-10T14:03:12Z app[e784966f1d2d89] ams [info] {"level":"INFO","fields":{"message":"listening","addr":"0.0.0.0:3000"}}
2024-06-10T14:03:13Z app[3d8d9e7f1e2d89] ams [info] {"level":"INFO","fields":{"message":"listening","addr":"0.0.0.0:3000"}}
"""

TOLLGATE = {
    "name": "tollgate",
    "desc": "Rust axum + sqlx API for an EV charging network (Postgres, cargo-nextest, Docker, Fly.io)",
    "sessions": [
        # ---------------------------------------------------------------- S1: sqlx offline cache, nextest groups
        S(13, "09:20", [
            U("ci's been red on every PR since i merged the tariff stuff. cargo build is fine on my machine. the log "
              "mumbles somthing about DATABASE_URL"),
            B("gh run view 9381745521 --log-failed | tail -n 12", TG_CI_LOG, desc="Show the failing CI step"),
            B("SQLX_OFFLINE=true cargo build -p tollgate-api", "", TG_OFFLINE_FAIL, rc=101,
              desc="Build the way CI does, without a database"),
            B("ls .sqlx | wc -l && git log --oneline -3 -- .sqlx",
              "17\n5c0e9a1 chore: sqlx prepare\n1f7d2b4 feat(sessions): open/close queries\n"
              "a08e3c7 chore: initial sqlx offline data"),
            A("Reproduced. The sqlx::query! / query_as! macros check every query against a real Postgres at "
              "compile time. Your machine has DATABASE_URL from .env, so it compiles; CI has no database and relies "
              "on the offline cache in .sqlx/. The two new tariff queries in crates/api/src/billing/tariff.rs were "
              "never added to that cache (last refresh was 5c0e9a1, three weeks ago), so CI cannot check them. "
              "Refreshing the cache against the compose database now."),
            B("docker compose up -d db && cargo sqlx prepare --workspace -- --all-targets",
              " Container tollgate-db-1  Running\n"
              "    Checking tollgate-core v0.4.0 (/home/sam/src/tollgate/crates/core)\n"
              "    Checking tollgate-api v0.4.0 (/home/sam/src/tollgate/crates/api)\n"
              "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 9.81s\n"
              "query data written to .sqlx in the workspace root; please check this into version control"),
            B("SQLX_OFFLINE=true cargo build --locked -p tollgate-api --all-targets && git status --short .sqlx",
              "   Compiling tollgate-api v0.4.0 (/home/sam/src/tollgate/crates/api)\n"
              "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 21.07s\n"
              "?? .sqlx/query-2b9e1f0c4d7a8e33b6f1d2c9a0e4b7f5d3c2a1e9f8b7c6d5e4f3a2b1c0d9e8f7.json\n"
              "?? .sqlx/query-91c4e2a7b0d3f6e5c8a1b4d7e0f3a6c9b2e5d8f1a4c7b0e3d6f9a2c5b8e1d4f7.json"),
            E(".github/workflows/ci.yml", "env:\n  CARGO_TERM_COLOR: always\n",
              "env:\n  CARGO_TERM_COLOR: always\n  # query! macros compile against .sqlx/, never a live database\n"
              "  SQLX_OFFLINE: \"true\"\n"),
            A("Fixed: the two tariff queries now have entries in .sqlx/ (staged, please commit them with the "
              "tariff PR), and SQLX_OFFLINE=true builds locally exactly like CI. I also set SQLX_OFFLINE: \"true\" "
              "in .github/workflows/ci.yml, so CI says \"no cached data for this query\" instead of the confusing "
              "DATABASE_URL message.\n\n"
              "The command is `cargo sqlx prepare --workspace -- --all-targets`, run with the compose database up "
              "(localhost:5434, DATABASE_URL in .env). --workspace puts the cache at the root for both crates, and "
              "--all-targets includes the queries inside tests, which plain prepare skips. Rule from here on: any "
              "PR that adds or changes a sqlx::query!/query_as!/query_scalar! reruns that command and commits the "
              ".sqlx/ changes in the same PR."),
            U("thx. also running tests locally is a mess, half the db tests die with 'too many clients'. whats the "
              "right way"),
            B("cargo nextest run --workspace", TG_NEXTEST_FAIL, "", rc=100),
            B("nproc && docker compose exec -T db psql -U tollgate -Atc \"show max_connections\"", "16\n100"),
            A("Every #[sqlx::test] creates a fresh database and its own pool, and nextest runs each test in its "
              "own process, 16 at a time on this machine. Sixteen test databases plus their pools and the "
              "maintenance connections blow through the compose Postgres limit of max_connections = 100, so tests "
              "fail at random with \"sorry, too many clients already\". Limiting only the database tests keeps the "
              "pure unit tests fast."),
            W(".config/nextest.toml", TG_NEXTEST_TOML),
            B("cargo nextest run --workspace",
              "    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.41s\n"
              "    Starting 212 tests across 9 binaries (3 tests skipped)\n"
              "        PASS [   0.010s] tollgate-core money::tests::adds_cents\n"
              "        ...\n"
              "------------\n"
              "     Summary [  31.207s] 212 tests run: 212 passed, 3 skipped"),
            A("All green: 212 passed, 3 skipped, in about 31 s.\n\n"
              "How to run them: `cargo nextest run --workspace` with `docker compose up -d db` running (the test "
              "databases are created on the compose Postgres at localhost:5434). Use nextest, not cargo test; the "
              "CI job runs the same command with --profile ci. The database tests are in the nextest test group "
              "`db` with max-threads = 4 in .config/nextest.toml, so at most four #[sqlx::test] databases exist at "
              "once while the unit tests still use all 16 threads.\n\n"
              "Not related to this: the app's own pool in crates/api/src/db.rs is PgPoolOptions with "
              "max_connections(10); tests never go through it."),
        ]),
        # ---------------------------------------------------------------- S2: double charges, outbox, migration
        S(10, "14:10", [
            U("finance found sessions charged twice on stripe last week, all at the Portobello site. that site got "
              "the new Alfen chargers. can u dig in"),
            B("psql \"$DATABASE_URL_PROD_RO\" -c \"select s.charger_id, s.transaction_id, count(*) as n, "
              "min(e.received_at)::time as first_recv, max(e.received_at)::time as last_recv, s.amount_cents from "
              "stop_events e join charging_sessions s using (charger_id, transaction_id) where s.site_id = 7 and "
              "e.received_at > now() - interval '10 days' group by 1, 2, 6 having count(*) > 1 order by 4 limit 5\"",
              TG_DUP_STOPS, desc="Find transactions with more than one stop event"),
            R("crates/api/src/sessions/handlers.rs", TG_STOP_HANDLER_RS),
            B("heroku logs -a tollgate-prod -n 1500 | grep '\"uri\":\"/ocpp/stop\"' | grep -E 'latency\":\"[0-9]{4}' "
              "| head -4", TG_HEROKU_LOGS),
            R("crates/api/src/main.rs", TG_MAIN_RS),
            A("Found it. Every duplicate pair is almost exactly 5 s apart, and the Alfen firmware resends "
              "StopTransaction after 5 seconds without a 200. Our stop handler awaits the Stripe charge inline, "
              "which takes 3-7 s whenever Stripe is slow, so the charger gives up, resends, and the second request "
              "prices and charges the same transaction again. The router's TimeoutLayer is "
              "Duration::from_secs(30), far above the charger's window, so nothing cut it short either.\n\n"
              "Proposal:\n"
              "1. Idempotency: a unique constraint on stop_events (charger_id, transaction_id), and the insert "
              "becomes INSERT ... ON CONFLICT DO NOTHING RETURNING id. No row back = already handled, answer 200.\n"
              "2. Take Stripe off the request path: the handler writes a row to a new billing_outbox table in the "
              "same transaction as the stop event and answers at once; a worker loop in the same binary charges "
              "the outbox rows."),
            U("why not just tokio::spawn the charge and return right away? seems way simpler than a table"),
            A("A spawned task only lives in memory. Heroku restarts every dyno at least once a day and on every "
              "deploy, so a charge that is spawned but not yet sent is lost if the dyno restarts, and nothing "
              "would ever retry it: the stop is recorded, the driver is never billed, and nobody notices. The "
              "outbox row commits together with the stop event, so after a restart the worker simply picks it up. "
              "The table also gives finance one place to see pending and failed charges."),
            U("fair. do both. i already put the unique into the sessions migration btw, just run it"),
            B("sqlx migrate run", "", "error: migration 20240528141200 was previously applied but has been modified",
              rc=1, desc="Apply pending migrations to the local database"),
            B("git diff --stat migrations/ && sqlx migrate info | tail -n 3",
              " migrations/20240528141200_sessions.up.sql | 3 ++-\n 1 file changed, 2 insertions(+), 1 deletion(-)\n"
              "20240528141200/installed (different checksum) sessions\n"
              "20240529090000/installed tariffs\n20240530113000/installed drivers stripe customer"),
            A("sqlx stores a checksum of every applied migration in _sqlx_migrations and refuses to run when an "
              "applied file changed: 20240528141200 is already in every database, including prod, so editing it "
              "would never reach them anyway. Putting the constraint into a new migration instead."),
            B("git checkout migrations/20240528141200_sessions.up.sql && sqlx migrate add -r stop_idempotency",
              "Creating migrations/20240604093000_stop_idempotency.up.sql\n"
              "Creating migrations/20240604093000_stop_idempotency.down.sql\n\n"
              "Congratulations on creating your first reversible migration!"),
            W("migrations/20240604093000_stop_idempotency.up.sql",
              "ALTER TABLE stop_events\n"
              "    ADD CONSTRAINT stop_events_charger_tx_key UNIQUE (charger_id, transaction_id);\n\n"
              "CREATE TABLE billing_outbox (\n"
              "    id            BIGSERIAL PRIMARY KEY,\n"
              "    session_id    BIGINT      NOT NULL UNIQUE REFERENCES charging_sessions (id),\n"
              "    amount_cents  BIGINT      NOT NULL,\n"
              "    attempts      INT         NOT NULL DEFAULT 0,\n"
              "    last_error    TEXT,\n"
              "    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),\n"
              "    charged_at    TIMESTAMPTZ\n"
              ");\n"),
            W("migrations/20240604093000_stop_idempotency.down.sql",
              "DROP TABLE billing_outbox;\nALTER TABLE stop_events DROP CONSTRAINT stop_events_charger_tx_key;\n"),
            B("sqlx migrate run", "Applied 20240604093000/migrate stop idempotency (14.210ms)"),
            E("crates/api/src/sessions/repo.rs", TG_REPO_INSERT_OLD, TG_REPO_INSERT_NEW),
            E("crates/api/src/sessions/handlers.rs",
              "    repo::insert_stop_event(&state.db, &charger_id, &req).await?;\n"
              "    let amount = billing::tariff::price_session(&state.db, &session, req.meter_stop_wh).await?;\n"
              "    state.stripe.charge(&session.driver_id, amount, &session.id).await?;\n"
              "    repo::close_session(&state.db, session.id, req.timestamp, amount).await?;\n",
              "    let mut tx = state.db.begin().await?;\n"
              "    if repo::insert_stop_event(&mut tx, &charger_id, &req).await?.is_none() {\n"
              "        // a resend of a stop we already recorded: acknowledge, do nothing\n"
              "        return Ok(StatusCode::OK);\n"
              "    }\n"
              "    let amount = billing::tariff::price_session(&mut tx, &session, req.meter_stop_wh).await?;\n"
              "    repo::close_session(&mut tx, session.id, req.timestamp, amount).await?;\n"
              "    billing::outbox::enqueue(&mut tx, session.id, amount).await?;\n"
              "    tx.commit().await?;\n", TG_STOP_HANDLER_RS),
            W("crates/api/src/billing/outbox.rs",
              "//! Charges are written here in the stop transaction and sent to Stripe by `run`, never inline.\n"
              "use std::time::Duration;\n\nuse sqlx::{PgConnection, PgPool};\nuse tollgate_core::money::Cents;\n\n"
              "use crate::billing::stripe::StripeClient;\n\n"
              "pub async fn enqueue(tx: &mut PgConnection, session_id: i64, amount: Cents) -> sqlx::Result<()> {\n"
              "    sqlx::query!(\"INSERT INTO billing_outbox (session_id, amount_cents) VALUES ($1, $2)\", session_id, "
              "amount.0)\n        .execute(tx)\n        .await?;\n    Ok(())\n}\n\n"
              "pub async fn run(db: PgPool, stripe: StripeClient) {\n"
              "    let mut tick = tokio::time::interval(Duration::from_secs(2));\n"
              "    loop {\n        tick.tick().await;\n"
              "        if let Err(e) = drain_once(&db, &stripe).await {\n"
              "            tracing::warn!(error = %e, \"billing outbox pass failed\");\n        }\n    }\n}\n"),
            B("cargo sqlx prepare --workspace -- --all-targets && cargo nextest run --workspace 2>&1 | tail -n 2",
              "query data written to .sqlx in the workspace root; please check this into version control\n"
              "------------\n     Summary [  33.915s] 219 tests run: 219 passed, 3 skipped"),
            A("Done, 219 tests pass.\n\n"
              "- Migration 20240604093000_stop_idempotency adds the unique (charger_id, transaction_id) on "
              "stop_events and the billing_outbox table. Your edit of migrations/20240528141200_sessions.up.sql is "
              "reverted: sqlx failed with \"migration 20240528141200 was previously applied but has been "
              "modified\" because it checksums applied files. Applied migrations are immutable here; every schema "
              "change is a new file from `sqlx migrate add -r <name>` (we use reversible up/down pairs).\n"
              "- crates/api/src/sessions/repo.rs: insert_stop_event does ON CONFLICT (charger_id, transaction_id) "
              "DO NOTHING RETURNING id and returns None for a resend; the handler then answers 200 and stops. "
              "Pricing, closing the session and the outbox row all happen in one transaction.\n"
              "- crates/api/src/billing/outbox.rs: the worker loop (every 2 s) charges pending rows through Stripe "
              "with the outbox id as Stripe idempotency key, so even a crash between the charge and the UPDATE "
              "cannot bill twice.\n"
              "- .sqlx/ refreshed for the changed queries.\n\n"
              "Finance can refund the later charge of each duplicate pair; the psql query above, without the "
              "limit, lists them all."),
        ], end="other"),
        # ---------------------------------------------------------------- S3: idle fees, Dockerfile, libssl
        S(8, "10:45", [
            U("next feature: idle fees. when a car is done and just sits there plugged in we charge per minute after "
              "a grace period. product says 15 min grace, 40 cents a minute, capped at 12 euros per session. "
              "amounts in cents as always"),
            R("crates/core/src/money.rs", TG_MONEY_RS),
            R("crates/api/src/billing/tariff.rs", TG_TARIFF_RS),
            A("Plan: count idle time from the StopTransaction until the connector reports Available again "
              "(cable unplugged), subtract the 15 min grace, multiply by 40 cents, cap at 1200. The fee is added "
              "to the session amount when the connector goes Available, and charged through the outbox as a "
              "second line."),
            U("no, stop usually comes when the driver is already back at the car. idle starts when the car stops "
              "drawing power, chargers send a StatusNotification with SuspendedEV then. people leave the car there "
              "for hours after its full"),
            W("migrations/20240606103000_idle_tracking.up.sql",
              "ALTER TABLE charging_sessions ADD COLUMN idle_since TIMESTAMPTZ;\n"
              "ALTER TABLE charging_sessions ADD COLUMN idle_fee_cents BIGINT NOT NULL DEFAULT 0;\n"),
            W("migrations/20240606103000_idle_tracking.down.sql",
              "ALTER TABLE charging_sessions DROP COLUMN idle_fee_cents;\n"
              "ALTER TABLE charging_sessions DROP COLUMN idle_since;\n"),
            W("crates/api/src/billing/idle_fee.rs", TG_IDLE_FEE_RS),
            E("crates/api/src/sessions/status.rs",
              "    repo::record_status(&state.db, &charger_id, req.connector_id, &req.status).await?;\n",
              "    repo::record_status(&state.db, &charger_id, req.connector_id, &req.status).await?;\n"
              "    match req.status.as_str() {\n"
              "        // first moment the car stopped drawing power; a later Charging clears it again\n"
              "        \"SuspendedEV\" => repo::mark_idle(&state.db, &charger_id, req.connector_id, req.timestamp).await?,\n"
              "        \"Charging\" => repo::clear_idle(&state.db, &charger_id, req.connector_id).await?,\n"
              "        _ => {}\n    }\n"),
            B("sqlx migrate run && cargo sqlx prepare --workspace -- --all-targets && cargo nextest run --workspace "
              "idle 2>&1 | tail -n 3",
              "Applied 20240606103000/migrate idle tracking (9.877ms)\n"
              "query data written to .sqlx in the workspace root; please check this into version control\n"
              "        PASS [   0.412s] tollgate-api::sessions status::suspended_then_charging_clears_idle\n"
              "------------\n     Summary [   3.180s] 9 tests run: 9 passed, 212 skipped"),
            A("Idle fees are in, based on your correction: idle time starts at the first SuspendedEV "
              "StatusNotification of the transaction (recorded in charging_sessions.idle_since; a later Charging "
              "clears it, e.g. when the car tops up the battery) and ends at StopTransaction. "
              "crates/api/src/billing/idle_fee.rs has the rules: IDLE_GRACE_MINUTES = 15, IDLE_FEE_PER_MIN 40 "
              "cents, IDLE_FEE_CAP_CENTS = 1200, and the fee goes into the same outbox charge as the energy.\n\n"
              "All amounts stay Cents(i64) from crates/core/src/money.rs: no f64 anywhere near prices, the per-kWh "
              "price included. Migration 20240606103000_idle_tracking, .sqlx refreshed, 9 idle tests pass."),
            U("also get a Dockerfile going, we're moving off the heroku buildpack to fly next week"),
            W("Dockerfile", TG_DOCKERFILE),
            B("docker build -t tollgate-api:dev .", TG_DOCKER_BUILD_OK),
            B("docker run --rm --env-file .env.docker -p 3000:3000 tollgate-api:dev", "",
              "/usr/local/bin/tollgate-api: error while loading shared libraries: libssl.so.3: cannot open shared "
              "object file: No such file or directory", rc=127, desc="Start the image locally"),
            B("cargo tree -i openssl-sys -e normal", TG_CARGO_TREE_SSL),
            E("crates/api/Cargo.toml", "reqwest = { version = \"0.12\", features = [\"json\"] }",
              "reqwest = { version = \"0.12\", default-features = false, features = [\"json\", \"rustls-tls\"] }"),
            B("cargo tree -i openssl-sys -e normal; docker build -q -t tollgate-api:dev . && docker run --rm -d "
              "--env-file .env.docker -p 3000:3000 --name tg tollgate-api:dev && sleep 2 && docker logs tg",
              "",
              "error: package ID specification `openssl-sys` did not match any packages\n"
              "sha256:77a0c1d5e2b94f8e3a6d0c9b1e7f2a4d8c6b3e0f9a2d5c8b1e4f7a0d3c6b9e2f\n"
              "9c1b7e04d2a8\n"
              "{\"timestamp\":\"2024-06-06T09:31:44.201Z\",\"level\":\"INFO\",\"fields\":{\"message\":"
              "\"listening\",\"addr\":\"0.0.0.0:3000\"},\"target\":\"tollgate_api\"}", rc=0),
            A("The image runs now. The first start failed with \"error while loading shared libraries: libssl.so.3: "
              "cannot open shared object file\": the runtime stage is debian:bookworm-slim, which has no OpenSSL, "
              "and the binary linked libssl through reqwest's default native-tls (cargo tree showed "
              "reqwest -> hyper-tls -> native-tls -> openssl-sys). Rather than apt-get installing libssl3 into the "
              "image, crates/api/Cargo.toml now has reqwest with default-features = false, features = [\"json\", "
              "\"rustls-tls\"]: there is no OpenSSL in the dependency tree any more (cargo tree -i openssl-sys "
              "finds nothing), the binary only needs glibc, and TLS no longer depends on whatever the base image "
              "ships. Keep it that way: a new crate that speaks HTTPS gets its rustls feature.\n\n"
              "Dockerfile: rust:1.79-bookworm builder with SQLX_OFFLINE=true and cache mounts, debian:bookworm-slim "
              "runtime with ca-certificates, binary at /usr/local/bin/tollgate-api, PORT 3000. A cold build takes "
              "about 3.5 min."),
        ]),
        # ---------------------------------------------------------------- S4: fly week one: pool, image, secrets, sig
        S(5, "15:30", [
            U("first week on fly, a few things. 1) pool: the load test maxed out the db pool, we went from 10 to 24 "
              "connections, pls change it. 2) image is 96MB, lets go distroless. settled on "
              "gcr.io/distroless/cc-debian12 for the runtime stage"),
            R("crates/api/src/db.rs", TG_DB_RS),
            E("crates/api/src/db.rs", "        .max_connections(10)\n", "        .max_connections(24)\n", TG_DB_RS),
            E("Dockerfile",
              "FROM debian:bookworm-slim\n"
              "RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf "
              "/var/lib/apt/lists/*\n",
              "# glibc + libgcc + ca-certificates, no shell, no package manager; runs as uid 65532\n"
              "FROM gcr.io/distroless/cc-debian12:nonroot\n", TG_DOCKERFILE),
            B("docker build -q -t tollgate-api:dev . && docker images tollgate-api:dev --format "
              "'{{.Repository}}:{{.Tag}} {{.Size}}'",
              "sha256:0f3e9d2c7b1a6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d\ntollgate-api:dev 38.2MB"),
            A("Both done.\n"
              "- crates/api/src/db.rs: PgPoolOptions max_connections(24). tollgate-db on Fly allows 100 "
              "connections, so two machines at 24 plus the release command stay well under it.\n"
              "- Dockerfile runtime stage: gcr.io/distroless/cc-debian12:nonroot, which has glibc, libgcc and "
              "ca-certificates but no shell. Image is 38.2 MB (was 96 MB). This only works because the binary has "
              "no OpenSSL since the rustls switch. There is no shell in the image any more, so `fly ssh console` "
              "won't give you a prompt; debug in a local bookworm container instead."),
            U("3) yesterday i ran fly secrets set for the new stripe webhook secret and every prod machine "
              "restarted at the same moment, chargers got 502s for about a minute. how do we avoid that"),
            B("fly releases -a tollgate-prod | head -4 && fly logs -a tollgate-prod --no-tail | grep -E "
              "'PC01|PR04|listening' | tail -n 4", TG_FLY_RELEASES + TG_FLY_LOGS_502),
            R("fly.prod.toml", TG_FLY_PROD_TOML),
            A("`fly secrets set` on an app with machines redeploys every machine immediately to hand them the new "
              "value, and that restart ignores the rolling strategy in fly.prod.toml: both machines went down "
              "together (the PR04 \"could not find a good candidate\" lines at 14:03). Next time use "
              "`fly secrets set --stage NAME=value -a tollgate-prod`: the secret is only stored, and the next "
              "`fly deploy --config fly.prod.toml` rolls it out one machine at a time like any release, with "
              "min_machines_running = 2 keeping one up.\n\n"
              "While looking at fly.prod.toml: schema migrations run from [deploy] release_command = "
              "\"/usr/local/bin/tollgate-api migrate\", a one-off machine that applies them before any new "
              "machine starts; if a migration fails, the release is aborted and the old machines keep serving. "
              "Staging is the same with fly.staging.toml."),
            U("4) and the new Alfen firmware 1.9 gets 401 on every request since this morning. 1.8 chargers are "
              "fine"),
            R("crates/api/src/auth/charger_sig.rs", TG_CHARGER_SIG_RS),
            B("fly logs -a tollgate-prod --no-tail | grep 'status\":401' | head -2 && psql \"$DATABASE_URL_PROD_RO\" "
              "-Atc \"select raw_body from charger_debug_requests where charger_id = 'ALF-PB-0117' order by id desc "
              "limit 1\"",
              "2024-06-11T08:02:14Z app[e784966f1d2d89] ams [info] {\"level\":\"INFO\",\"fields\":{\"message\":"
              "\"finished processing request\",\"latency\":\"2 ms\",\"status\":401},\"span\":{\"method\":\"POST\","
              "\"uri\":\"/ocpp/status\"}}\n"
              "2024-06-11T08:02:19Z app[3d8d9e7f1e2d89] ams [info] {\"level\":\"INFO\",\"fields\":{\"message\":"
              "\"finished processing request\",\"latency\":\"1 ms\",\"status\":401},\"span\":{\"method\":\"POST\","
              "\"uri\":\"/ocpp/meter\"}}\n"
              "{ \"connectorId\": 2, \"status\": \"Charging\", \"timestamp\": \"2024-06-11T08:02:13.870Z\", "
              "\"errorCode\": \"NoError\" }"),
            A("Cause: the extractor in crates/api/src/auth/charger_sig.rs parses the body with Json<T> first and "
              "then computes the HMAC over serde_json::to_vec(&payload), i.e. over our own re-serialization. 1.8 "
              "happened to send compact JSON in struct field order, so the bytes matched; 1.9 sends spaces and "
              "puts connectorId first, so our re-serialized bytes differ from what the charger signed and every "
              "request fails with 401."),
            E("crates/api/src/auth/charger_sig.rs",
              "        let Json(payload) = Json::<T>::from_request(req, state).await.map_err(|_| "
              "StatusCode::BAD_REQUEST)?;\n"
              "        let secret = state.charger_secrets.get(&charger_id).ok_or(StatusCode::UNAUTHORIZED)?;\n"
              "        let body = serde_json::to_vec(&payload).map_err(|_| StatusCode::BAD_REQUEST)?;\n",
              "        let body = Bytes::from_request(req, state).await.map_err(|_| StatusCode::BAD_REQUEST)?;\n"
              "        let secret = state.charger_secrets.get(&charger_id).ok_or(StatusCode::UNAUTHORIZED)?;\n",
              TG_CHARGER_SIG_RS),
            E("crates/api/src/auth/charger_sig.rs",
              "        mac.verify_slice(&expected).map_err(|_| StatusCode::UNAUTHORIZED)?;\n"
              "        Ok(Signed(charger_id, payload))\n",
              "        mac.verify_slice(&expected).map_err(|_| StatusCode::UNAUTHORIZED)?;\n"
              "        // only now parse: the signature covers the bytes the charger sent, not our serialization\n"
              "        let payload = serde_json::from_slice(&body).map_err(|_| StatusCode::BAD_REQUEST)?;\n"
              "        Ok(Signed(charger_id, payload))\n"),
            B("cargo nextest run --workspace charger_sig 2>&1 | tail -n 4",
              "        PASS [   0.006s] tollgate-api auth::charger_sig::tests::accepts_pretty_printed_body\n"
              "        PASS [   0.005s] tollgate-api auth::charger_sig::tests::rejects_tampered_body\n"
              "------------\n     Summary [   0.071s] 6 tests run: 6 passed, 215 skipped"),
            A("Fixed in crates/api/src/auth/charger_sig.rs: the HMAC is now checked over the raw body bytes exactly "
              "as received (Bytes extractor), and only after verify_slice succeeds is the body parsed with "
              "serde_json::from_slice. New tests sign a pretty-printed body and a reordered one; 6 signature tests "
              "pass. The rule for that file: verify first, parse second. No Json<T> extractor or any other parsing "
              "may run before the signature check, because any re-serialization changes the bytes.\n\n"
              "Deploy with `fly deploy --config fly.prod.toml` once CI is green; 1.9 chargers retry failed status "
              "posts, so nothing is lost."),
        ], end="clear"),
        # ---------------------------------------------------------------- S5: three values change, staging deploy
        S(2, "16:40", [
            U("ops says 15 min idle grace is too generous, people game it. tweak it down to 10"),
            E("crates/api/src/billing/idle_fee.rs", "pub const IDLE_GRACE_MINUTES: i64 = 15;",
              "pub const IDLE_GRACE_MINUTES: i64 = 10;", TG_IDLE_FEE_RS),
            B("cargo nextest run --workspace idle_fee 2>&1 | tail -n 3",
              "        FAIL [   0.004s] tollgate-api billing::idle_fee::tests::twelve_idle_minutes_are_free\n"
              "------------\n     Summary [   0.052s] 5 tests run: 4 passed, 1 failed, 216 skipped", rc=100),
            E("crates/api/src/billing/idle_fee.rs",
              "    fn twelve_idle_minutes_are_free() {\n        assert_eq!(idle_fee(Some(at(0)), at(12)), Cents(0));",
              "    fn twelve_idle_minutes_cost_two() {\n        assert_eq!(idle_fee(Some(at(0)), at(12)), Cents(80));"),
            A("IDLE_GRACE_MINUTES = 10 now in crates/api/src/billing/idle_fee.rs. One test assumed the old grace "
              "(12 idle minutes free); it now expects 2 billable minutes, 80 cents. 5 idle fee tests pass."),
            U("and the cap, finance settled on 20 euros max per session"),
            E("crates/api/src/billing/idle_fee.rs", "pub const IDLE_FEE_CAP_CENTS: Cents = Cents(1200);",
              "pub const IDLE_FEE_CAP_CENTS: Cents = Cents(2000);"),
            A("Done: IDLE_FEE_CAP_CENTS = 2000, so at 40 cents a minute the cap is reached after 50 billable "
              "minutes instead of 30."),
            U("last one. the 30s request timeout makes no sense when chargers give up after 5. drop it to 10, "
              "anything slower than that is a bug anyway"),
            E("crates/api/src/main.rs", "        .layer(TimeoutLayer::new(Duration::from_secs(30)));",
              "        .layer(TimeoutLayer::new(Duration::from_secs(10)));", TG_MAIN_RS),
            B("cargo nextest run --workspace 2>&1 | tail -n 1 && fly deploy --config fly.staging.toml 2>&1 | "
              "grep -E 'release_command|Migrat|Applied|complete' ",
              "     Summary [  34.402s] 226 tests run: 226 passed, 3 skipped\n"
              "Running tollgate-staging release_command: /usr/local/bin/tollgate-api migrate\n"
              "  Starting machine 17811e2f6d5589 for release_command\n"
              "  release_command 17811e2f6d5589 completed successfully\n"
              "Visit your newly deployed app at https://tollgate-staging.fly.dev/\n"
              "\u2714 Machine 4d89d3e6b57008 [app] update complete"),
            A("TimeoutLayer is Duration::from_secs(10) now (crates/api/src/main.rs), so a stuck request gets a "
              "408 instead of hanging for 30 s. All three changes are on staging: 226 tests pass, the release "
              "command ran (no pending migrations). Summary of the values now in effect: IDLE_GRACE_MINUTES = 10, "
              "IDLE_FEE_CAP_CENTS = 2000, request timeout 10 s. Prod goes out with `fly deploy --config "
              "fly.prod.toml` when you're happy with staging."),
        ]),
    ],
    "recall": [
        Q("how'd we run the full test suite on a laptop again?", "cargo nextest run --workspace", "command"),
        Q("which incantation regenerates the cached query metadata that CI compiles against?",
          "cargo sqlx prepare --workspace -- --all-targets", "command"),
        Q("what do I type to ship a build to production?", "fly deploy --config fly.prod.toml", "command"),
        Q("schema changes on the live db, when and how do those get applied?", "release_command", "command"),
        Q("my psql can't reach the dockerized postgres on the default port, which one is it?", "localhost:5434",
          "config"),
        Q("what keeps the sqlx db tests from exhausting postgres connections?", "max-threads = 4", "fix"),
        Q("why did drivers at portobello get billed twice for a single charge?",
          "resends StopTransaction after 5 seconds", "root-cause"),
        Q("remind me, why does billing go through a db table rather than a background task?",
          "lost if the dyno restarts", "decision"),
        Q("why didnt we just install libssl into the runtime image when the container wouldnt start?",
          "no OpenSSL in the dependency tree", "decision"),
        Q("where's the hmac check for requests coming from chargers?", "crates/api/src/auth/charger_sig.rs",
          "location"),
        Q("how did we get firmware 1.9's requests accepted again after the 401s?", "raw body bytes", "fix"),
        Q("can the per kWh price just be an f64? simpler for the pricing maths", "Cents(i64)", "preference"),
        Q("pool size for postgres in the api these days?", "max_connections(24)", "superseded",
          stale="max_connections(10)"),
        Q("whats the idle grace period at the moment", "IDLE_GRACE_MINUTES = 10", "superseded",
          stale="IDLE_GRACE_MINUTES = 15"),
        Q("which base image does the final docker stage use?", "distroless/cc-debian12", "superseded",
          stale="debian:bookworm-slim"),
        Q("how long may a request take before the router gives up on it?", "Duration::from_secs(10)", "superseded",
          stale="Duration::from_secs(30)"),
        Q("max idle charge per session right now?", "IDLE_FEE_CAP_CENTS = 2000", "superseded",
          stale="IDLE_FEE_CAP_CENTS = 1200"),
    ],
    "noise": [
        N("gm, picking this back up after the long weekend", "greeting"),
        N("nice one, ttyl", "greeting"),
        N("rename SiteKind to LocationKind in crates/core/src/site.rs and fix the call sites", "instruction"),
        N("in rust, when is Box<dyn Error> good enough and when do I want a thiserror enum?", "general"),
        N("whats the difference between tokio::select! and join! really", "general"),
        N("did anyone ever price out Adyen as an alternative payment provider?", "never-discussed"),
    ],
    "actions": [
        T("Edit", "migrations/20240528141200_sessions.up.sql", "Applied migrations are immutable", "gotcha",
          "each session should remember which plug type was used (CCS, CHAdeMO or Type2); nullable for old rows"),
        T("Edit", "crates/api/src/auth/charger_sig.rs", "verify first, parse second", "convention",
          "the Wallbox units we're onboarding sign with sha512 and send X-WB-Signature; accept those too"),
        T("Edit", "crates/api/src/sessions/repo.rs", "ON CONFLICT (charger_id, transaction_id) DO NOTHING",
          "history",
          "support needs a manual stop for stuck sessions in the admin panel. add the repository function that "
          "writes it"),
        T("Edit", "crates/api/src/billing/idle_fee.rs", "SuspendedEV", "history",
          "a few sites only want to charge for blocking the spot in daytime, 08-20 local. make that a per-site "
          "setting"),
        T("Bash", "fly secrets set SENTRY_DSN=https://3f2c9a71@o44120.ingest.sentry.io/7110 -a tollgate-prod",
          "fly secrets set --stage", "gotcha",
          "here's the sentry dsn for prod: https://3f2c9a71@o44120.ingest.sentry.io/7110 -- put it on the app"),
        T("Write", "crates/api/src/i18n/mod.rs", None, "noise-file",
          "driver-facing error messages need German and Dutch versions. set up a small translations module"),
        T("Read", "crates/core/src/units.rs", None, "noise-file",
          "how do we represent energy amounts internally? show me the units module"),
        F("SQLX_OFFLINE=true cargo build --locked -p tollgate-api --all-targets",
          "   Compiling tollgate-api v0.4.0 (/home/sam/src/tollgate/crates/api)\n"
          "error: `SQLX_OFFLINE=true` but there is no cached data for this query, run `cargo sqlx prepare` to "
          "update the query cache or unset `SQLX_OFFLINE`\n"
          "  --> crates/api/src/drivers/history.rs:27:20\n"
          "   |\n"
          "27 |       let rows = sqlx::query_as!(\n"
          "   |  ____________________^\n"
          "28 | |         SessionSummary,\n"
          "29 | |         r#\"SELECT s.id, s.started_at, s.stopped_at, s.amount_cents AS \"amount_cents: Cents\"\n"
          "...  |\n"
          "35 | |     )\n"
          "   | |_____^\n"
          "   |\n"
          "   = note: this error originates in the macro `$crate::sqlx_macros::expand_query` which comes from the "
          "expansion of the macro `sqlx::query_as` (in Nightly builds, run with -Z macro-backtrace for more info)\n\n"
          "error: could not compile `tollgate-api` (lib) due to 1 previous error\n",
          "cargo sqlx prepare --workspace -- --all-targets", "known-error",
          "I wrote a query listing a driver's sessions over the last 30 days for the app's history screen. check "
          "that it builds the way the pipeline builds it", rc=101),
        F("sqlx migrate run",
          "error: migration 20240604093000 was previously applied but has been modified\n",
          "sqlx migrate add -r", "known-error",
          "I tweaked the idempotency migration to also add an index on received_at. apply it to my local db"),
        F("docker build -q -t tollgate-api:dev . && docker run --rm --env-file .env.docker -p 3000:3000 "
          "tollgate-api:dev",
          "sha256:5d2a8f1c9e4b7a0d3f6c2e8b1a5d9f4c7e0b3a6d2f8c1e5b9a4d7f0c3e6b2a8d\n"
          "/usr/local/bin/tollgate-api: error while loading shared libraries: libssl.so.3: cannot open shared "
          "object file: No such file or directory\n",
          "rustls-tls", "known-error",
          "pulled in the sentry crate for error reporting. build the container and check it still boots", rc=127),
        F("cargo clippy --workspace --all-targets -- -D warnings",
          "    Checking tollgate-api v0.4.0 (/home/sam/src/tollgate/crates/api)\n"
          "error: this `MutexGuard` is held across an `await` point\n"
          "  --> crates/api/src/routes/driver.rs:88:13\n"
          "   |\n"
          "88 |         let mut cache = state.tariff_cache.lock().unwrap();\n"
          "   |             ^^^^^^^^^\n"
          "   |\n"
          "   = help: consider using an async-aware `Mutex` type or ensuring the `MutexGuard` is dropped before "
          "calling `await`\n"
          "   = note: `-D clippy::await-holding-lock` implied by `-D warnings`\n\n"
          "error: could not compile `tollgate-api` (lib) due to 1 previous error\n",
          None, "novel-error", "lint the workspace the strict way before I open the PR", rc=101),
    ],
}

# ==============================================================================================================
# allotment -- Go + templ + htmx web app for the Leith Links Allotment Society (plots, tool shed, waitlist)
# ==============================================================================================================
AL_MAKEFILE = """TEMPL ?= templ
TAILWIND ?= ./bin/tailwindcss
HTMX_VERSION ?= 1.9.12

.PHONY: dev dev-templ dev-css generate css test test-integration vendor-htmx

## dev: templ watches *.templ, rebuilds and restarts the server, and proxies it with live reload
dev:
\t$(MAKE) -j2 dev-templ dev-css

dev-templ:
\t$(TEMPL) generate --watch --proxy="http://localhost:8080" --cmd="go run ./cmd/allotment"

dev-css:
\t$(TAILWIND) -i static/css/input.css -o static/css/app.css --watch

generate:
\t$(TEMPL) generate
\tsqlc generate

css:
\t$(TAILWIND) -i static/css/input.css -o static/css/app.css --minify

test:
\tgo test ./...

test-integration:
\tgo test -tags integration ./...

vendor-htmx:
\tcurl -sSfL https://unpkg.com/htmx.org@$(HTMX_VERSION)/dist/htmx.min.js -o static/vendor/htmx.min.js
"""

AL_MAKE_DEV_FAIL = """make -j2 dev-templ dev-css
templ generate --watch --proxy="http://localhost:8080" --cmd="go run ./cmd/allotment"
./bin/tailwindcss -i static/css/input.css -o static/css/app.css --watch
(!) templ version check: generator v0.2.778 is newer than templ version v0.2.747 found in go.mod file, consider running `go get -u github.com/a-h/templ` to upgrade
(\u2713) Proxy server listening on http://127.0.0.1:7331, proxying http://localhost:8080
(\u2713) Complete [ updates=23 duration=38.114ms ]
# github.com/leithplots/allotment/internal/web/views
internal/web/views/layout_templ.go:58:32: undefined: templ.JoinURLErrs
internal/web/views/plots_templ.go:112:31: undefined: templ.JoinURLErrs
internal/web/views/tools_templ.go:87:31: undefined: templ.JoinURLErrs
(\u2717) Command failed error=exit status 1

Rebuilding...

Done in 212ms.
make: *** [dev] Terminated
"""

AL_GO_BUILD_FAIL = """# github.com/leithplots/allotment/internal/web/views
internal/web/views/layout_templ.go:58:32: undefined: templ.JoinURLErrs
internal/web/views/plots_templ.go:112:31: undefined: templ.JoinURLErrs
internal/web/views/tools_templ.go:87:31: undefined: templ.JoinURLErrs
"""

AL_TESTCONTAINERS_FAIL = """go test -tags integration ./...
?   \tgithub.com/leithplots/allotment/cmd/allotment\t[no test files]
ok  \tgithub.com/leithplots/allotment/internal/booking\t0.011s
2024/06/06 10:31:07 testutil: start postgres container: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?: failed to create Docker provider
FAIL\tgithub.com/leithplots/allotment/internal/store\t0.204s
2024/06/06 10:31:08 testutil: start postgres container: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?: failed to create Docker provider
FAIL\tgithub.com/leithplots/allotment/internal/waitlist\t0.198s
ok  \tgithub.com/leithplots/allotment/internal/web\t0.087s
FAIL
make: *** [test-integration] Error 1
"""

AL_TOOLS_GO = """package web

import (
\t"errors"
\t"net/http"
\t"strconv"
\t"time"

\t"github.com/leithplots/allotment/internal/auth"
\t"github.com/leithplots/allotment/internal/db"
\t"github.com/leithplots/allotment/internal/store"
\t"github.com/leithplots/allotment/internal/web/views"
)

// CreateToolBooking handles POST /tools/{id}/bookings from the booking modal.
func (h *Handlers) CreateToolBooking(w http.ResponseWriter, r *http.Request) {
\tmember := auth.MemberFrom(r.Context())
\ttoolID, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
\tif err != nil {
\t\thttp.NotFound(w, r)
\t\treturn
\t}
\tday, err := time.Parse("2006-01-02", r.FormValue("day"))
\tif err != nil {
\t\th.render(w, r, views.BookingForm(toolID, "Pick a day"))
\t\treturn
\t}
\terr = h.store.BookTool(r.Context(), db.BookToolParams{ToolID: toolID, MemberID: member.ID, Day: pgDate(day)})
\tif errors.Is(err, store.ErrAlreadyBooked) {
\t\th.render(w, r, views.BookingForm(toolID, "Someone already has it that day"))
\t\treturn
\t}
\tif err != nil {
\t\th.serverError(w, r, err)
\t\treturn
\t}
\thttp.Redirect(w, r, "/tools", http.StatusSeeOther)
}
"""

AL_TOOLS_TEMPL = """package views

import "fmt"

templ BookingForm(toolID int64, errMsg string) {
\t<form hx-post={ fmt.Sprintf("/tools/%d/bookings", toolID) } hx-target="#modal-body" hx-swap="innerHTML" class="space-y-4">
\t\t<label class="block text-sm font-medium">
\t\t\tDay
\t\t\t<input type="date" name="day" class="mt-1 w-full rounded border-gray-300" required/>
\t\t</label>
\t\tif errMsg != "" {
\t\t\t<p class="text-sm text-red-700">{ errMsg }</p>
\t\t}
\t\t<button class="rounded bg-emerald-700 px-4 py-2 text-white">Book</button>
\t</form>
}
"""

AL_RULES_GO = """package booking

import (
\t"errors"
\t"time"
)

// Society rules agreed at the AGM. They live here, not in handlers or templates.
const (
\tMaxPlotsPerHousehold  = 1
\tMaxToolBookingsPerWeek = 2
)

var ErrTooFarAhead = errors.New("booking: day is beyond the booking window")

// Today is the current calendar day.
func Today() time.Time {
\treturn time.Now().Truncate(24 * time.Hour)
}
"""

AL_RULES_GO_S3 = """package booking

import (
\t"errors"
\t"time"
)

// Society rules agreed at the AGM. They live here, not in handlers or templates.
const (
\tMaxPlotsPerHousehold   = 1
\tMaxToolBookingsPerWeek = 2
\tBookingHorizonDays     = 14
)

var ErrTooFarAhead = errors.New("booking: day is beyond the booking window")

// Today is the current calendar day.
func Today() time.Time {
\treturn time.Now().Truncate(24 * time.Hour)
}

// CheckHorizon rejects days more than BookingHorizonDays after today.
func CheckHorizon(day time.Time) error {
\tif day.After(Today().AddDate(0, 0, BookingHorizonDays)) {
\t\treturn ErrTooFarAhead
\t}
\treturn nil
}
"""

AL_REDIRECT_GO = """package web

import "net/http"

// Redirect sends the browser to url. An htmx request (HX-Request: true) gets an HX-Redirect header instead of a
// 303: htmx would follow the 303 inside its XHR and swap the whole target page into the request's hx-target.
func Redirect(w http.ResponseWriter, r *http.Request, url string) {
\tif r.Header.Get("HX-Request") == "true" {
\t\tw.Header().Set("HX-Redirect", url)
\t\tw.WriteHeader(http.StatusOK)
\t\treturn
\t}
\thttp.Redirect(w, r, url, http.StatusSeeOther)
}
"""

AL_LAYOUT_TEMPL = """package views

templ Layout(title string) {
\t<!DOCTYPE html>
\t<html lang="en-GB">
\t\t<head>
\t\t\t<meta charset="utf-8"/>
\t\t\t<meta name="viewport" content="width=device-width, initial-scale=1"/>
\t\t\t<title>{ title } \u00b7 Leith Links Allotments</title>
\t\t\t<link rel="stylesheet" href="/static/css/app.css"/>
\t\t\t<script src="/static/vendor/htmx.min.js" defer></script>
\t\t</head>
\t\t<body class="min-h-screen bg-stone-50 text-stone-900">
\t\t\t@MemberNav()
\t\t\t<main class="mx-auto max-w-4xl p-4">
\t\t\t\t{ children... }
\t\t\t</main>
\t\t\t<div id="modal" class="hidden"><div id="modal-body"></div></div>
\t\t</body>
\t</html>
}
"""

AL_CSRF_403 = """HTTP/1.1 403 Forbidden
Content-Type: text/plain; charset=utf-8
Vary: Cookie
X-Content-Type-Options: nosniff
Date: Wed, 05 Jun 2024 12:14:31 GMT
Content-Length: 31

Forbidden - CSRF token invalid
"""

AL_BADGE_TEMPL = """package components

import "fmt"

var statusColor = map[string]string{
\t"vacant":  "green",
\t"let":     "sky",
\t"overdue": "red",
\t"notice":  "amber",
}

templ StatusPill(status string) {
\t<span class={ fmt.Sprintf("rounded-full px-2 py-0.5 text-xs font-medium bg-%s-100 text-%s-800", statusColor[status], statusColor[status]) }>
\t\t{ status }
\t</span>
}
"""

AL_KAMAL_SETUP_FAIL = """Acquiring the deploy lock...
Ensure Docker is installed...
  INFO [2f1c9b07] Running docker -v on 116.203.44.19
  INFO [2f1c9b07] Finished in 1.804 seconds with exit status 0 (successful).
Log into image registry...
  INFO [8a3d6e11] Running docker login ghcr.io -u [REDACTED] -p [REDACTED] as ewan@localhost
  INFO [8a3d6e11] Finished in 1.522 seconds with exit status 0 (successful).
Build and push app image...
  INFO [c5e07a42] Running docker buildx build --output=type=registry --platform linux/amd64 --builder kamal-local-docker-container -t ghcr.io/leithplots/allotment:5e1b7c93 -t ghcr.io/leithplots/allotment:latest --label service="allotment" --file Dockerfile . as ewan@localhost
  INFO [c5e07a42] Finished in 141.207 seconds with exit status 0 (successful).
Launching accessory db...
  INFO [3a9e6b21] Running docker run --name allotment-db --detach --restart unless-stopped --network kamal --log-opt max-size="10m" --publish 127.0.0.1:5432:5432 --env POSTGRES_DB="allotment" --env-file .kamal/apps/allotment/env/accessories/db.env --volume $PWD/allotment-db/data:/var/lib/postgresql/data --label service="allotment-db" postgres:16.3 on 116.203.44.19
  INFO [3a9e6b21] Finished in 4.310 seconds with exit status 0 (successful).
  INFO [5b6f19a2] Running docker run --detach --restart unless-stopped --name allotment-web-5e1b7c93 --network kamal --hostname 116.203.44.19-2c7d3e9f01ab -e KAMAL_CONTAINER_NAME="allotment-web-5e1b7c93" --env-file .kamal/apps/allotment/env/roles/web.env --label service="allotment" --label role="web" ghcr.io/leithplots/allotment:5e1b7c93 on 116.203.44.19
  INFO [5b6f19a2] Finished in 1.102 seconds with exit status 0 (successful).
  INFO [0d2e8f47] Running docker exec kamal-proxy kamal-proxy deploy allotment-web --target="2c7d3e9f01ab:8080" --host="plots.leithlinksallotments.org.uk" --tls --deploy-timeout="30s" --drain-timeout="30s" --buffer-requests --buffer-responses on 116.203.44.19
Releasing the deploy lock...
  ERROR (SSHKit::Runner::ExecuteError): Exception while executing on host 116.203.44.19: docker exit status: 1
docker stdout: Nothing written
docker stderr: Error: target failed to become healthy within configured timeout (30s)
"""

AL_DEPLOY_YML = """service: allotment
image: leithplots/allotment

servers:
  web:
    - 116.203.44.19

proxy:
  ssl: true
  host: plots.leithlinksallotments.org.uk
  app_port: 8080

registry:
  server: ghcr.io
  username: leithplots-bot
  password:
    - KAMAL_REGISTRY_PASSWORD

builder:
  arch: amd64

env:
  clear:
    APP_ENV: production
  secret:
    - DATABASE_URL
    - SESSION_KEY
    - CSRF_KEY
    - SMTP_PASSWORD

accessories:
  db:
    image: postgres:16.3
    host: 116.203.44.19
    port: "127.0.0.1:5432:5432"
    env:
      clear:
        POSTGRES_DB: allotment
      secret:
        - POSTGRES_PASSWORD
    directories:
      - data:/var/lib/postgresql/data
"""

AL_CONFIG_GO = """package main

import "os"

type config struct {
\tEnv         string
\tAddr        string
\tDatabaseURL string
}

func loadConfig() config {
\treturn config{
\t\tEnv: envOr("APP_ENV", "dev"),
\t\t// loopback by default so macOS doesn't ask to allow incoming connections on every `go run`
\t\tAddr:        envOr("ADDR", "127.0.0.1:8080"),
\t\tDatabaseURL: os.Getenv("DATABASE_URL"),
\t}
}

func envOr(k, def string) string {
\tif v := os.Getenv(k); v != "" {
\t\treturn v
\t}
\treturn def
}
"""

AL_KAMAL_DEPLOY_OK = """Acquiring the deploy lock...
Log into image registry...
Build and push app image...
  INFO [e1a90c3d] Finished in 38.911 seconds with exit status 0 (successful).
  INFO [71b2f6a8] Running docker exec kamal-proxy kamal-proxy deploy allotment-web --target="9f41c0d7e2b3:8080" --host="plots.leithlinksallotments.org.uk" --tls --deploy-timeout="30s" --drain-timeout="30s" --buffer-requests --buffer-responses on 116.203.44.19
  INFO [71b2f6a8] Finished in 3.804 seconds with exit status 0 (successful).
Prune old containers and images...
Releasing the deploy lock...
  Finished all in 64.1 seconds
"""

ALLOTMENT = {
    "name": "allotment",
    "desc": "Go web app with templ + htmx for an allotment society (sqlc/pgx, goose, Tailwind, Kamal 2)",
    "sessions": [
        # ---------------------------------------------------------------- S1: new laptop: templ pin, 7331, colima
        S(14, "10:05", [
            U("new macbook, trying to get allotment running. make dev starts but the page never live reloads and "
              "theres a wall of go erorrs. templ is from brew if that matters"),
            R("Makefile", AL_MAKEFILE),
            B("timeout 25 make dev", AL_MAKE_DEV_FAIL, "", rc=124, desc="Start the dev loop and watch the output"),
            B("go build ./...", "", AL_GO_BUILD_FAIL, rc=1),
            B("templ version && go list -m github.com/a-h/templ && which templ",
              "v0.2.778\ngithub.com/a-h/templ v0.2.747\n/opt/homebrew/bin/templ"),
            A("Two separate things.\n\n"
              "The build errors: brew gave you templ CLI v0.2.778 but go.mod pins the templ runtime at v0.2.747. "
              "The newer generator writes *_templ.go files that call templ.JoinURLErrs, which the pinned runtime "
              "doesn't have yet, hence \"undefined: templ.JoinURLErrs\" in every generated view. I'll make the "
              "Makefile run the generator through go run, so it is always the version from go.mod."),
            E("Makefile", "TEMPL ?= templ\n", "TEMPL ?= go run github.com/a-h/templ/cmd/templ\n", AL_MAKEFILE),
            B("make generate && go build ./... && echo build-ok",
              "go run github.com/a-h/templ/cmd/templ generate\n"
              "(\u2713) Complete [ updates=23 duration=41.207ms ]\nsqlc generate\nbuild-ok"),
            A("Builds again. The Makefile's TEMPL is now `go run github.com/a-h/templ/cmd/templ`, so `make dev` and "
              "`make generate` always use the generator version pinned in go.mod; the regenerated files match the "
              "runtime. Don't call the brew `templ` binary directly in this repo (you can `brew uninstall templ`).\n\n"
              "Live reload: `make dev` runs templ's watch mode with a proxy. The app itself listens on 8080, but "
              "the page that reloads on save is the proxy at http://localhost:7331, which injects the reload "
              "script. If you had 8080 open, that's why nothing refreshed."),
            U("yep was on 8080. now the integration tests, they die instantly. i use colima not docker desktop"),
            B("make test-integration", AL_TESTCONTAINERS_FAIL, "", rc=2),
            B("colima status 2>&1 && ls -l /var/run/docker.sock",
              "INFO[0000] colima is running using macOS Virtualization.Framework\n"
              "INFO[0000] arch: aarch64\nINFO[0000] runtime: docker\nINFO[0000] mountType: virtiofs\n"
              "INFO[0000] socket: unix:///Users/ewan/.colima/default/docker.sock\n"
              "ls: /var/run/docker.sock: No such file or directory", rc=1),
            E(".envrc", "export DATABASE_URL=postgres://allotment:allotment@localhost:5432/allotment?sslmode=disable\n",
              "export DATABASE_URL=postgres://allotment:allotment@localhost:5432/allotment?sslmode=disable\n"
              "# colima: tell the docker client and testcontainers where the daemon is; inside the VM the socket\n"
              "# is still /var/run/docker.sock, which the Ryuk reaper container mounts\n"
              "export DOCKER_HOST=unix://$HOME/.colima/default/docker.sock\n"
              "export TESTCONTAINERS_DOCKER_SOCKET_OVERRIDE=/var/run/docker.sock\n"),
            B("direnv allow && make test-integration",
              "direnv: loading ~/src/allotment/.envrc\n"
              "direnv: export +DOCKER_HOST +TESTCONTAINERS_DOCKER_SOCKET_OVERRIDE ~DATABASE_URL\n"
              "go test -tags integration ./...\n"
              "?   \tgithub.com/leithplots/allotment/cmd/allotment\t[no test files]\n"
              "ok  \tgithub.com/leithplots/allotment/internal/booking\t0.012s\n"
              "ok  \tgithub.com/leithplots/allotment/internal/store\t9.418s\n"
              "ok  \tgithub.com/leithplots/allotment/internal/waitlist\t6.902s\n"
              "ok  \tgithub.com/leithplots/allotment/internal/web\t0.091s"),
            A("Integration tests pass. testcontainers looks for /var/run/docker.sock, which colima doesn't create on "
              "the Mac, so every package that starts a Postgres container failed in testutil. .envrc (direnv) now "
              "exports DOCKER_HOST=unix://$HOME/.colima/default/docker.sock and "
              "TESTCONTAINERS_DOCKER_SOCKET_OVERRIDE=/var/run/docker.sock (the path inside the colima VM, which "
              "the Ryuk cleanup container mounts). In a shell without direnv, export those two first.\n\n"
              "The two suites: `make test` is `go test ./...`, unit tests only, no Docker. `make test-integration` "
              "is `go test -tags integration ./...`; the integration-tagged tests each get a throwaway Postgres 16 "
              "container with the goose migrations applied, about 20 s in total."),
            U("random q while ur in the makefile: why is htmx vendored in static/vendor? every tutorial just uses "
              "the unpkg script tag"),
            B("grep -n -A4 'Content-Security-Policy' internal/web/middleware.go",
              "31:\tw.Header().Set(\"Content-Security-Policy\", strings.Join([]string{\n"
              "32-\t\t\"default-src 'self'\",\n33-\t\t\"script-src 'self'\",\n"
              "34-\t\t\"style-src 'self'\",\n35-\t\t\"img-src 'self' data:\",\n"),
            A("Because of our own Content-Security-Policy: internal/web/middleware.go sends script-src 'self', so "
              "the browser only runs scripts served from our domain. The council's pen test in March required "
              "that (no third-party script origins on a site that holds members' addresses), and a script tag "
              "pointing at unpkg would simply be blocked. So htmx is downloaded once by `make vendor-htmx` into "
              "static/vendor/htmx.min.js and committed; the version is HTMX_VERSION in the Makefile, currently "
              "htmx.org@1.9.12."),
        ]),
        # ---------------------------------------------------------------- S2: modal 303, horizon, sql rule, csrf
        S(11, "13:50", [
            U("bug from the committee: booking the rotavator from the shed page, after you hit Book the whole site, "
              "header and all, shows up inside the little modal. also members may book tools 14 days ahead max, "
              "thats what the AGM agreed. enforce that server side, right now only the date picker does"),
            R("internal/web/tools.go", AL_TOOLS_GO),
            R("internal/web/views/tools.templ", AL_TOOLS_TEMPL),
            R("internal/booking/rules.go", AL_RULES_GO),
            A("The modal: the form posts with hx-post and hx-target=\"#modal-body\". On success the handler answers "
              "303 See Other to /tools. htmx's XHR followed the 303 transparently, received the complete /tools "
              "page (layout, header, nav) and swapped all of it into #modal-body. For htmx requests the handler "
              "has to answer with an HX-Redirect header instead, so htmx navigates the whole window; plain form "
              "posts keep the 303."),
            W("internal/web/redirect.go", AL_REDIRECT_GO),
            E("internal/web/tools.go", "\thttp.Redirect(w, r, \"/tools\", http.StatusSeeOther)\n}",
              "\tRedirect(w, r, \"/tools\")\n}", AL_TOOLS_GO),
            B("grep -rn 'http.Redirect(' internal/web --include=*.go | grep -v redirect.go",
              "internal/web/plots.go:74:\thttp.Redirect(w, r, \"/plots/\"+strconv.FormatInt(p.ID, 10), "
              "http.StatusSeeOther)\n"
              "internal/web/auth.go:51:\thttp.Redirect(w, r, \"/\", http.StatusSeeOther)\n"
              "internal/web/auth.go:88:\thttp.Redirect(w, r, \"/login\", http.StatusSeeOther)\n"
              "internal/web/waitlist.go:39:\thttp.Redirect(w, r, \"/waitlist/thanks\", http.StatusSeeOther)"),
            E("internal/web/plots.go",
              "\thttp.Redirect(w, r, \"/plots/\"+strconv.FormatInt(p.ID, 10), http.StatusSeeOther)",
              "\tRedirect(w, r, \"/plots/\"+strconv.FormatInt(p.ID, 10))"),
            E("internal/web/waitlist.go", "\thttp.Redirect(w, r, \"/waitlist/thanks\", http.StatusSeeOther)",
              "\tRedirect(w, r, \"/waitlist/thanks\")"),
            E("internal/booking/rules.go",
              "\tMaxPlotsPerHousehold  = 1\n\tMaxToolBookingsPerWeek = 2\n)",
              "\tMaxPlotsPerHousehold   = 1\n\tMaxToolBookingsPerWeek = 2\n\tBookingHorizonDays     = 14\n)",
              AL_RULES_GO),
            E("internal/web/tools.go",
              "\terr = h.store.BookTool(r.Context(), db.BookToolParams{",
              "\tif err := booking.CheckHorizon(day); err != nil {\n"
              "\t\th.render(w, r, views.BookingForm(toolID, \"Tools can be booked up to 14 days ahead\"))\n"
              "\t\treturn\n\t}\n"
              "\terr = h.store.BookTool(r.Context(), db.BookToolParams{"),
            B("go test ./internal/web/ ./internal/booking/ -run 'Booking|Horizon|Redirect' -v 2>&1 | grep -E "
              "'^(=== RUN|--- |ok|FAIL)' | tail -n 6",
              "--- PASS: TestRedirect_HTMXGetsHeader (0.00s)\n"
              "--- PASS: TestRedirect_PlainPostGets303 (0.00s)\n"
              "--- PASS: TestCreateToolBooking_RejectsBeyondHorizon (0.01s)\n"
              "--- PASS: TestCheckHorizon (0.00s)\n"
              "ok  \tgithub.com/leithplots/allotment/internal/web\t0.094s\n"
              "ok  \tgithub.com/leithplots/allotment/internal/booking\t0.010s"),
            A("Both fixed.\n\n"
              "Modal: htmx followed the 303 to /tools and put the full page into #modal-body. New helper "
              "web.Redirect in internal/web/redirect.go: for requests with HX-Request: true it sets HX-Redirect "
              "and answers 200, so htmx does a full-window navigation; otherwise it's the usual 303. "
              "CreateToolBooking in internal/web/tools.go and the redirects in plots.go and waitlist.go use it now "
              "(auth.go's two are plain form posts, left alone but harmless to switch). Convention from now on: "
              "handlers redirect with web.Redirect, never http.Redirect directly.\n\n"
              "Horizon: BookingHorizonDays = 14 in internal/booking/rules.go, checked by booking.CheckHorizon in "
              "the handler, so a hand-crafted POST can't get past it either; the form shows \"Tools can be booked "
              "up to 14 days ahead\". Tests pass."),
            U("while ur in rules.go, MaxPlotsPerHousehold is there but nothing checks it when the committee "
              "assigns a plot"),
            E("internal/web/plots.go",
              "\tif err := h.store.AssignPlot(r.Context(), plotID, householdID); err != nil {",
              "\tvar held int\n"
              "\tif err := h.pool.QueryRow(r.Context(), `SELECT count(*) FROM plot_tenancies WHERE household_id = $1 "
              "AND ended_at IS NULL`, householdID).Scan(&held); err != nil {\n"
              "\t\th.serverError(w, r, err)\n\t\treturn\n\t}\n"
              "\tif held >= booking.MaxPlotsPerHousehold {\n"
              "\t\th.render(w, r, views.AssignError(\"This household already holds the maximum number of plots\"))\n"
              "\t\treturn\n\t}\n"
              "\tif err := h.store.AssignPlot(r.Context(), plotID, householdID); err != nil {"),
            A("AssignPlot now counts the household's open tenancies and refuses when it already holds "
              "MaxPlotsPerHousehold = 1, with a message in the assign dialog."),
            U("no sql in handlers pls, ever. queries go in internal/db/queries/*.sql and through sqlc like the rest"),
            E("internal/db/queries/plots.sql", "-- name: AssignPlot :exec\n",
              "-- name: CountOpenTenancies :one\n"
              "SELECT count(*) FROM plot_tenancies WHERE household_id = $1 AND ended_at IS NULL;\n\n"
              "-- name: AssignPlot :exec\n"),
            E("internal/web/plots.go",
              "\tvar held int\n"
              "\tif err := h.pool.QueryRow(r.Context(), `SELECT count(*) FROM plot_tenancies WHERE household_id = $1 "
              "AND ended_at IS NULL`, householdID).Scan(&held); err != nil {",
              "\theld, err := h.q.CountOpenTenancies(r.Context(), householdID)\n\tif err != nil {"),
            B("make generate && go vet ./... && go test ./internal/web/ 2>&1 | tail -n 1",
              "go run github.com/a-h/templ/cmd/templ generate\n"
              "(\u2713) Complete [ updates=23 duration=40.018ms ]\nsqlc generate\n"
              "ok  \tgithub.com/leithplots/allotment/internal/web\t0.097s"),
            A("Moved: the count is the sqlc query CountOpenTenancies in internal/db/queries/plots.sql, and the "
              "handler calls h.q.CountOpenTenancies. Noted as a standing rule: handlers never contain SQL; every "
              "query lives in internal/db/queries/*.sql and is called through the sqlc-generated internal/db "
              "package. After touching a query or a .templ file run `make generate` (templ + sqlc generate)."),
            U("cancel on my bookings page gives 403 since the same release. also when do the reminder mails go "
              "out, someone asked"),
            B("curl -s -i -X DELETE -b \"$(cat .dev-cookie)\" -H 'HX-Request: true' "
              "http://localhost:8080/bookings/4411", AL_CSRF_403),
            R("internal/web/views/layout.templ", AL_LAYOUT_TEMPL),
            A("gorilla/csrf wants the token on every unsafe method, either as the gorilla.csrf.Token form field or "
              "the X-CSRF-Token header. Forms have the hidden field, but the cancel button was switched to "
              "hx-delete in that release; it sends no form at all, so no token and a 403."),
            E("internal/web/views/layout.templ",
              "\t\t<body class=\"min-h-screen bg-stone-50 text-stone-900\">",
              "\t\t<body class=\"min-h-screen bg-stone-50 text-stone-900\" hx-headers={ csrfHeaders(ctx) }>",
              AL_LAYOUT_TEMPL),
            W("internal/web/views/csrf.go",
              "package views\n\nimport (\n\t\"context\"\n\t\"encoding/json\"\n\n"
              "\t\"github.com/leithplots/allotment/internal/auth\"\n)\n\n"
              "// csrfHeaders is the hx-headers value on <body>: htmx sends it with every request it makes.\n"
              "func csrfHeaders(ctx context.Context) string {\n"
              "\tb, _ := json.Marshal(map[string]string{\"X-CSRF-Token\": auth.CSRFToken(ctx)})\n"
              "\treturn string(b)\n}\n"),
            B("make generate >/dev/null && go test ./internal/web/ -run Cancel -v 2>&1 | tail -n 2 && grep -n "
              "ReminderHour internal/mail/reminders.go",
              "--- PASS: TestCancelBooking_HTMXSendsCSRFHeader (0.01s)\n"
              "ok  \tgithub.com/leithplots/allotment/internal/web\t0.088s\n"
              "14:const ReminderHour = 7 // local hour (Europe/London) at which members get today's bookings"),
            A("Cancel works again. <body> in internal/web/views/layout.templ now carries hx-headers with the "
              "X-CSRF-Token from gorilla/csrf (built in internal/web/views/csrf.go), so every htmx request sends "
              "the token, including hx-delete and hx-put buttons without a form. Anything that replaces or adds a "
              "layout has to keep that attribute on <body>, or all htmx actions on those pages get 403.\n\n"
              "Reminders: ReminderHour = 7 in internal/mail/reminders.go, so members get the mail at 07:00 UK time "
              "on the day of the booking."),
        ], end="other"),
        # ---------------------------------------------------------------- S3: tailwind purge, midnight, sessions
        S(7, "11:20", [
            U("the plot status pills are all grey on the live site but coloured on my machine?? vacant should be "
              "green, overdue red etc"),
            R("internal/web/views/components/badge.templ", AL_BADGE_TEMPL),
            B("ls -l static/css/app.css && git check-ignore -v static/css/app.css && grep -c "
              "'bg-green-100\\|bg-red-100\\|bg-amber-100' static/css/app.css",
              "-rw-r--r--  1 ewan  staff  31244 May 21 16:02 static/css/app.css\n"
              ".gitignore:4:static/css/app.css\tstatic/css/app.css\n3"),
            B("make css && grep -c 'bg-green-100\\|bg-red-100\\|bg-amber-100' static/css/app.css",
              "./bin/tailwindcss -i static/css/input.css -o static/css/app.css --minify\n\nRebuilding...\n\n"
              "Done in 187ms.\n0", rc=1),
            E("internal/web/views/components/badge.templ",
              "var statusColor = map[string]string{\n\t\"vacant\":  \"green\",\n\t\"let\":     \"sky\",\n"
              "\t\"overdue\": \"red\",\n\t\"notice\":  \"amber\",\n}",
              "// Complete class strings only: Tailwind finds classes by scanning this file as text.\n"
              "var statusClasses = map[string]string{\n"
              "\t\"vacant\":  \"bg-green-100 text-green-800\",\n\t\"let\":     \"bg-sky-100 text-sky-800\",\n"
              "\t\"overdue\": \"bg-red-100 text-red-800\",\n\t\"notice\":  \"bg-amber-100 text-amber-800\",\n}",
              AL_BADGE_TEMPL),
            E("internal/web/views/components/badge.templ",
              "\t<span class={ fmt.Sprintf(\"rounded-full px-2 py-0.5 text-xs font-medium bg-%s-100 text-%s-800\", "
              "statusColor[status], statusColor[status]) }>",
              "\t<span class={ \"rounded-full px-2 py-0.5 text-xs font-medium\", statusClasses[status] }>"),
            B("make generate >/dev/null && make css >/dev/null && grep -c "
              "'bg-green-100\\|bg-red-100\\|bg-amber-100' static/css/app.css", "3"),
            A("Tailwind only generates classes it finds as complete strings when it scans the templates. The pill "
              "classes were built with fmt.Sprintf(\"bg-%s-100 ...\", color), so \"bg-green-100\" never appears "
              "anywhere and the production CSS (built fresh in the Docker build) has none of them: grey pills. "
              "Your local static/css/app.css is gitignored and dated 21 May, from before the pill refactor, when "
              "the classes were still spelled out, so it happened to have them.\n\n"
              "internal/web/views/components/badge.templ now maps each status to full class names "
              "(\"bg-green-100 text-green-800\", ...), and a fresh `make css` contains all of them. Rule for the "
              "templates: never assemble a Tailwind class from pieces; write full class names, e.g. in a map."),
            U("another one. Maureen booked the strimmer at 00:20 on saturday and her booking says firday"),
            R("internal/booking/rules.go", AL_RULES_GO_S3),
            B("ssh plots-old 'docker exec allotment date; docker exec allotment ls /usr/share/zoneinfo'",
              "Mon Jun 10 09:14:03 UTC 2024",
              "ls: cannot access '/usr/share/zoneinfo': No such file or directory", rc=2),
            E("internal/booking/rules.go",
              "// Today is the current calendar day.\nfunc Today() time.Time {\n"
              "\treturn time.Now().Truncate(24 * time.Hour)\n}",
              "// Local is the society's time zone. Every calendar-day decision uses it, never the server's zone.\n"
              "var Local = mustLoad(\"Europe/London\")\n\n"
              "// Today is the current calendar day in Local, as midnight Local.\n"
              "func Today() time.Time { return DayOf(time.Now()) }\n\n"
              "// DayOf is the calendar day (in Local) that t falls on.\n"
              "func DayOf(t time.Time) time.Time {\n\tt = t.In(Local)\n"
              "\treturn time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, Local)\n}", AL_RULES_GO_S3),
            E("cmd/allotment/main.go", "import (\n", "import (\n\t_ \"time/tzdata\" // the runtime image has no "
              "zoneinfo\n"),
            B("go test ./internal/booking/ -v -run 'Today|DayOf' 2>&1 | tail -n 4",
              "--- PASS: TestDayOf_JustAfterMidnightBST (0.00s)\n--- PASS: TestDayOf_WinterUTCEqualsLocal (0.00s)\n"
              "--- PASS: TestToday_UsesLocal (0.00s)\nok  \tgithub.com/leithplots/allotment/internal/booking\t0.009s"),
            A("Found it: the container's clock is UTC, and Today() truncated UTC time. In summer the UK is on BST "
              "(UTC+1), so 00:20 on Saturday in Leith is 23:20 on Friday for the server, and the booking was "
              "stored for Friday. Truncate(24h) is also UTC-based even when the zone is set.\n\n"
              "Fix in internal/booking/rules.go: booking.Local is Europe/London, and Today()/DayOf() compute the "
              "calendar day in it. The production image has no /usr/share/zoneinfo, so cmd/allotment/main.go "
              "imports _ \"time/tzdata\" to embed the zone database (about 450 kB). Convention: any date logic "
              "(today, tomorrow, week boundaries, the horizon) goes through booking.Local / booking.DayOf, never "
              "time.Now().Truncate or the server zone."),
            U("members also moan they get logged out every week. hows the session lifetime set?"),
            B("grep -n 'sessions\\.' cmd/allotment/main.go",
              "47:\tsessions := scs.New()\n48:\tsessions.Store = pgxstore.New(pool)\n"
              "49:\tsessions.Lifetime = 168 * time.Hour\n50:\tsessions.Cookie.SameSite = http.SameSiteLaxMode\n"
              "51:\tsessions.Cookie.Secure = cfg.Env != \"dev\""),
            A("cmd/allotment/main.go sets sessions.Lifetime = 168 * time.Hour: 7 days from login, an absolute "
              "lifetime, whether or not the member is active. Sessions are stored in Postgres through scs "
              "pgxstore, so a longer lifetime costs nothing and we can still end a session server side. If the "
              "committee wants something else it's that one line (there's also IdleTimeout if they'd rather "
              "expire inactive logins only)."),
        ]),
        # ---------------------------------------------------------------- S4: kamal on hetzner, htmx 2, two plots
        S(4, "09:05", [
            U("moving to the new hetzner box with kamal 2 today. config/deploy.yml is written, but the first kamal "
              "setup dies at the health check"),
            B("kamal setup", AL_KAMAL_SETUP_FAIL, "", rc=1),
            B("kamal app logs -n 3",
              "App Host: 116.203.44.19\n"
              "2024-06-13T08:21:40.118Z time=2024-06-13T08:21:40.118Z level=INFO msg=\"connected to postgres\"\n"
              "2024-06-13T08:21:40.131Z time=2024-06-13T08:21:40.131Z level=INFO msg=listening "
              "addr=127.0.0.1:8080 env=production"),
            R("cmd/allotment/config.go", AL_CONFIG_GO),
            A("The app is up but unreachable: it listens on 127.0.0.1:8080, the loopback default from "
              "cmd/allotment/config.go. Inside a container that means only the container itself can connect, and "
              "kamal-proxy, which runs in its own container on the kamal network, gets connection refused on "
              "its /up health checks until the 30 s deploy timeout."),
            R("config/deploy.yml", AL_DEPLOY_YML),
            E("config/deploy.yml", "  clear:\n    APP_ENV: production\n",
              "  clear:\n    APP_ENV: production\n    # the default 127.0.0.1 is unreachable from kamal-proxy\n"
              "    ADDR: \"0.0.0.0:8080\"\n", AL_DEPLOY_YML),
            B("kamal deploy", AL_KAMAL_DEPLOY_OK),
            A("Live on the Hetzner box. The health check failed because the app bound to 127.0.0.1:8080 inside "
              "the container. config/deploy.yml now sets ADDR: \"0.0.0.0:8080\" under env.clear, so it listens on "
              "all interfaces in the container (port 8080 is still only reachable through kamal-proxy; the host "
              "publishes nothing but 80/443). The loopback default stays for `go run` on your Mac. From now on a "
              "production deploy is `kamal deploy`."),
            U("site's up!! but the footer with the charity number i added this morning isnt there"),
            B("git status --short && git log -1 --format='%h %s'",
              " M internal/web/views/layout.templ\n M internal/web/views/layout_templ.go\n"
              "a7c31e0 deploy: kamal config for hetzner"),
            A("Your footer change is not committed. Kamal 2 builds the image from a clean git clone of HEAD, not "
              "from your working directory, so uncommitted edits never reach the server no matter how often you "
              "deploy. Commit it and deploy again; want me to?"),
            U("go ahead, msg 'footer: charity number'"),
            B("git commit -am 'footer: charity number' && kamal deploy | tail -n 1",
              "[main 3e9b0d4] footer: charity number\n 2 files changed, 14 insertions(+), 1 deletion(-)\n"
              "  Finished all in 58.7 seconds"),
            A("Committed as 3e9b0d4 and deployed; the footer with the charity number is live."),
            U("also bump htmx. we went from 1.9.12 to 2.0.2 on the council's other site without drama, same here "
              "pls"),
            B("make vendor-htmx HTMX_VERSION=2.0.2 && head -c 60 static/vendor/htmx.min.js",
              "curl -sSfL https://unpkg.com/htmx.org@2.0.2/dist/htmx.min.js -o static/vendor/htmx.min.js\n"
              "var htmx=function(){\"use strict\";const Q={onLoad:null,proc"),
            E("Makefile", "HTMX_VERSION ?= 1.9.12\n", "HTMX_VERSION ?= 2.0.2\n", AL_MAKEFILE),
            B("grep -rn 'hx-delete\\|hx-on\\|hx-sse\\|hx-ws' internal/web/views --include=*.templ",
              "internal/web/views/bookings.templ:22:\t\t<button hx-delete={ fmt.Sprintf(\"/bookings/%d\", b.ID) } "
              "hx-target=\"closest li\" hx-swap=\"outerHTML\" class=\"text-sm text-red-700\">Cancel</button>"),
            B("make generate >/dev/null && go test ./... 2>&1 | tail -n 3",
              "ok  \tgithub.com/leithplots/allotment/internal/booking\t0.010s\n"
              "ok  \tgithub.com/leithplots/allotment/internal/waitlist\t0.022s\n"
              "ok  \tgithub.com/leithplots/allotment/internal/web\t0.101s"),
            A("htmx is on htmx.org@2.0.2 now: static/vendor/htmx.min.js re-downloaded and HTMX_VERSION ?= 2.0.2 in "
              "the Makefile. Checked the 2.x breaking changes against our templates: no hx-on, hx-sse or hx-ws; "
              "the only hx-delete (cancel) now sends its parameters in the query string instead of the body, and "
              "r.FormValue reads the query string too, so it works unchanged. The hx-headers CSRF header is "
              "unaffected. Tests pass. It goes out with the next deploy."),
            U("and the committee agreed two plots per household is the rule these days, not one"),
            E("internal/booking/rules.go", "\tMaxPlotsPerHousehold   = 1\n", "\tMaxPlotsPerHousehold   = 2\n"),
            B("go test ./internal/booking/ ./internal/web/ 2>&1 | tail -n 2",
              "ok  \tgithub.com/leithplots/allotment/internal/booking\t0.009s\n"
              "ok  \tgithub.com/leithplots/allotment/internal/web\t0.095s"),
            A("MaxPlotsPerHousehold = 2 in internal/booking/rules.go; AssignPlot refuses a third plot. Tests pass."),
        ], end="clear"),
        # ---------------------------------------------------------------- S5: agm outcomes, staging
        S(1, "18:30", [
            U("agm outcomes, 3 changes. tool bookings up to 21 days ahead (was 14). reminder mails at 6pm the "
              "evening before instead of 7am on the day. and logins should last 30 days"),
            E("internal/booking/rules.go", "\tBookingHorizonDays     = 14\n", "\tBookingHorizonDays     = 21\n"),
            E("internal/web/tools.go", "\"Tools can be booked up to 14 days ahead\"",
              "fmt.Sprintf(\"Tools can be booked up to %d days ahead\", booking.BookingHorizonDays)"),
            R("internal/mail/reminders.go",
              "package mail\n\n// ReminderHour is the local hour (Europe/London) at which members get today's bookings.\n"
              "const ReminderHour = 7\n\n"
              "func (j *ReminderJob) due(now time.Time) ([]db.ToolBooking, error) {\n"
              "\treturn j.q.BookingsOnDay(j.ctx, pgDate(booking.DayOf(now)))\n}\n"),
            E("internal/mail/reminders.go",
              "// ReminderHour is the local hour (Europe/London) at which members get today's bookings.\n"
              "const ReminderHour = 7\n",
              "// ReminderHour is the local hour (Europe/London) at which members get tomorrow's bookings.\n"
              "const ReminderHour = 18\n"),
            E("internal/mail/reminders.go",
              "\treturn j.q.BookingsOnDay(j.ctx, pgDate(booking.DayOf(now)))",
              "\treturn j.q.BookingsOnDay(j.ctx, pgDate(booking.DayOf(now).AddDate(0, 0, 1)))"),
            E("cmd/allotment/main.go", "\tsessions.Lifetime = 168 * time.Hour\n",
              "\tsessions.Lifetime = 720 * time.Hour\n"),
            B("go test ./... 2>&1 | tail -n 4",
              "ok  \tgithub.com/leithplots/allotment/internal/booking\t0.011s\n"
              "ok  \tgithub.com/leithplots/allotment/internal/mail\t0.015s\n"
              "ok  \tgithub.com/leithplots/allotment/internal/waitlist\t0.021s\n"
              "ok  \tgithub.com/leithplots/allotment/internal/web\t0.098s"),
            A("All three done, tests pass:\n"
              "- BookingHorizonDays = 21 in internal/booking/rules.go; the form message now reads the constant "
              "instead of hard-coding the number.\n"
              "- ReminderHour = 18 in internal/mail/reminders.go, and the job now selects tomorrow's bookings "
              "(booking.DayOf(now) plus one day), so the mail arrives at 18:00 the evening before.\n"
              "- sessions.Lifetime = 720 * time.Hour (30 days) in cmd/allotment/main.go. Existing sessions keep "
              "their old expiry; new logins get 30 days."),
            U("put it on staging so the committee can poke at it before thursday"),
            B("git commit -qam 'agm: 21-day horizon, evening reminders, 30-day logins' && kamal deploy -d staging "
              "| tail -n 3",
              "  INFO [4be2a719] Running docker exec kamal-proxy kamal-proxy deploy allotment-web "
              "--target=\"b7d0e93a4c12:8080\" --host=\"staging.plots.leithlinksallotments.org.uk\" --tls "
              "--deploy-timeout=\"30s\" --drain-timeout=\"30s\" on 49.12.201.77\n"
              "Releasing the deploy lock...\n  Finished all in 71.9 seconds"),
            A("Committed and deployed to staging with `kamal deploy -d staging` (config/deploy.staging.yml on "
              "the small box 49.12.201.77): https://staging.plots.leithlinksallotments.org.uk. Production stays on "
              "the old values until you run plain `kamal deploy` after the committee signs off."),
        ]),
    ],
    "recall": [
        Q("what do I type to get the auto-refreshing dev server going?", "make dev", "command"),
        Q("how'd we run the tests that need a real postgres again?", "go test -tags integration ./...", "command"),
        Q("after editing a query file or a component, which incantation rebuilds the generated go code?",
          "make generate", "command"),
        Q("pushing to the pre-production box, whats the command?", "kamal deploy -d staging", "command"),
        Q("which port do I open in the browser so saves refresh the page by themselves?", "localhost:7331",
          "config"),
        Q("why did the booking dialog end up showing the entire site inside it?", "followed the 303",
          "root-cause"),
        Q("why were the plot state pills colourless in production?", "built with fmt.Sprintf", "root-cause"),
        Q("why did a reservation made just after midnight get filed under the previous day?",
          "the container's clock is UTC", "root-cause"),
        Q("the very first deploy to the hetzner machine never turned healthy. what was wrong?", "127.0.0.1:8080",
          "root-cause"),
        Q("how did we get the cancel button past the 403 forbidden?", "hx-headers", "fix"),
        Q("why is htmx served from our own static folder rather than a cdn?", "script-src 'self'", "decision"),
        Q("where's the redirect helper that plays nicely with htmx?", "internal/web/redirect.go", "location"),
        Q("quick one, can I drop a small SELECT straight into a handler func?", "internal/db/queries",
          "preference"),
        Q("how far ahead can members reserve the rotavator and friends these days?", "BookingHorizonDays = 21",
          "superseded", stale="BookingHorizonDays = 14"),
        Q("how long does a login last now before members need to sign in again?", "Lifetime = 720 * time.Hour",
          "superseded", stale="Lifetime = 168 * time.Hour"),
        Q("which htmx release is vendored right now?", "htmx.org@2.0.2", "superseded", stale="htmx.org@1.9.12"),
        Q("how many plots may one household hold at the moment?", "MaxPlotsPerHousehold = 2", "superseded",
          stale="MaxPlotsPerHousehold = 1"),
        Q("what time do the booking reminder emails get sent nowadays?", "ReminderHour = 18", "superseded",
          stale="ReminderHour = 7"),
    ],
    "noise": [
        N("hey hey, back on the plots app", "greeting"),
        N("cheers, that'll do for today", "greeting"),
        N("rename PlotHolder to Tenant in internal/store/plot_holder.go and update the references", "instruction"),
        N("in go, when would I pick a buffered channel over an unbuffered one?", "general"),
        N("what's the difference between hx-swap outerHTML and innerHTML?", "general"),
        N("did the committee ever talk about taking rent payments through GoCardless?", "never-discussed"),
    ],
    "actions": [
        T("Edit", "internal/web/views/layout.templ", "X-CSRF-Token", "gotcha",
          "split the base layout: a plain public one without the member nav, for the landing and join pages"),
        T("Edit", "internal/web/tools.go", "web.Redirect", "convention",
          "when someone hands a tool back, send them to the shed overview afterwards"),
        T("Edit", "internal/web/views/components/badge.templ", "full class names", "gotcha",
          "new plot state 'reserved' for incoming tenants, give it a purple pill"),
        T("Edit", "internal/booking/rules.go", "booking.Local", "convention",
          "members shouldn't be able to take out the same tool two days running. add that rule"),
        T("Bash", "kamal deploy", "clean git clone of HEAD", "gotcha",
          "ship my waitlist email wording fix to the live site"),
        T("Write", "internal/web/views/committee.templ", None, "noise-file",
          "add a page listing the committee members with their roles and contact emails"),
        T("Read", "internal/web/views/components/pagination.templ", None, "noise-file",
          "the pager under the members list looks off. show me the pagination component"),
        F("go build ./...",
          "# github.com/leithplots/allotment/internal/web/views\n"
          "internal/web/views/layout_templ.go:61:32: undefined: templ.JoinURLErrs\n"
          "internal/web/views/plots_templ.go:140:31: undefined: templ.JoinURLErrs\n"
          "internal/web/views/waitlist_templ.go:52:31: undefined: templ.JoinURLErrs\n",
          "go run github.com/a-h/templ/cmd/templ", "known-error",
          "I reran templ myself after editing the plots page and now things look broken. does it compile?"),
        F("make test-integration",
          "go test -tags integration ./...\n"
          "?   \tgithub.com/leithplots/allotment/cmd/allotment\t[no test files]\n"
          "ok  \tgithub.com/leithplots/allotment/internal/booking\t0.013s\n"
          "ok  \tgithub.com/leithplots/allotment/internal/mail\t0.016s\n"
          "2024/06/20 08:14:51 testutil: start postgres container: Cannot connect to the Docker daemon at "
          "unix:///var/run/docker.sock. Is the docker daemon running?: failed to create Docker provider\n"
          "FAIL\tgithub.com/leithplots/allotment/internal/store\t0.188s\n"
          "2024/06/20 08:14:52 testutil: start postgres container: Cannot connect to the Docker daemon at "
          "unix:///var/run/docker.sock. Is the docker daemon running?: failed to create Docker provider\n"
          "FAIL\tgithub.com/leithplots/allotment/internal/waitlist\t0.176s\n"
          "FAIL\nmake: *** [test-integration] Error 1\n",
          "TESTCONTAINERS_DOCKER_SOCKET_OVERRIDE=/var/run/docker.sock", "known-error",
          "plain zsh without direnv today. run the db-backed tests for the waitlist store", rc=2),
        F("kamal deploy -d staging",
          "Acquiring the deploy lock...\n"
          "Log into image registry...\n"
          "Build and push app image...\n"
          "  INFO [9d0c4e12] Finished in 44.318 seconds with exit status 0 (successful).\n"
          "  INFO [f3a1b605] Running docker run --detach --restart unless-stopped --name allotment-web-8c2d71fa "
          "--network kamal --hostname 49.12.201.77-5a0e9c3b7d21 -e KAMAL_CONTAINER_NAME=\"allotment-web-8c2d71fa\" "
          "--env-file .kamal/apps/allotment-staging/env/roles/web.env --label service=\"allotment\" --label "
          "role=\"web\" --label destination=\"staging\" ghcr.io/leithplots/allotment:8c2d71fa on 49.12.201.77\n"
          "  INFO [f3a1b605] Finished in 1.041 seconds with exit status 0 (successful).\n"
          "  INFO [62be09d4] Running docker exec kamal-proxy kamal-proxy deploy allotment-web "
          "--target=\"5a0e9c3b7d21:8080\" --host=\"staging.plots.leithlinksallotments.org.uk\" --tls "
          "--deploy-timeout=\"30s\" --drain-timeout=\"30s\" on 49.12.201.77\n"
          "Releasing the deploy lock...\n"
          "  ERROR (SSHKit::Runner::ExecuteError): Exception while executing on host 49.12.201.77: docker exit "
          "status: 1\n"
          "docker stdout: Nothing written\n"
          "docker stderr: Error: target failed to become healthy within configured timeout (30s)\n",
          "0.0.0.0:8080", "known-error",
          "staging moved to a fresh box and its destination file got rewritten from scratch. deploy there"),
        F("go test ./internal/waitlist/...",
          "--- FAIL: TestOfferNextPlot (0.00s)\n"
          "panic: assignment to entry in nil map [recovered]\n"
          "\tpanic: assignment to entry in nil map\n\n"
          "goroutine 21 [running]:\n"
          "testing.tRunner.func1.2({0x1012a4f80, 0x1013c2b90})\n"
          "\t/opt/homebrew/Cellar/go/1.22.4/libexec/src/testing/testing.go:1631 +0x1c4\n"
          "github.com/leithplots/allotment/internal/waitlist.(*Offerer).Next(0x14000118e40, {0x1013d1a28, "
          "0x14000120000}, 0x7)\n"
          "\t/Users/ewan/src/allotment/internal/waitlist/offer.go:58 +0x2a8\n"
          "FAIL\tgithub.com/leithplots/allotment/internal/waitlist\t0.214s\n"
          "FAIL\n",
          None, "novel-error", "I wrote the waitlist offer logic. run its tests"),
    ],
}

PROJECTS = [TOLLGATE, ALLOTMENT]
