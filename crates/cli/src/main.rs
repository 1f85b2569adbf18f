//! `supervise`, the operator CLI: decide what sandboxed agents may reach, on the same
//! SQLite database a running `supervise-server` uses.
//!
//! Layout: [`cli`] is the command line (clap), [`cmd`] one module per command family,
//! [`render`] human output (tables, colour, safe text), [`json`] the `--json` documents,
//! [`config`] the database path and operator name, [`exit`] the exit codes, [`gate`] the git side of the git gate. All state changes go through `supervise-store`.

mod cli;
mod cmd;
mod config;
mod exit;
mod gate;
mod json;
mod render;

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::{CommandFactory, FromArgMatches};

use crate::cli::audit::AuditCommand;
use crate::cli::{
    BottleCommand, CheckCommand, Cli, Command, GateCommand, OperatorCommand, RulesCommand,
};
use crate::cmd::Ctx;
use crate::cmd::decide::{Action, Decide};
use crate::render::Style;

/// Environment variables the CLI reads itself (`config::db_setting`), by argument: set, they
/// beat a `--config` file as clap's own ones do.
const OWN_ENV: &[(&str, &str)] = &[("db", "SUPERVISE_DB"), ("db_file", "SUPERVISE_DB_FILE")];

fn main() -> ExitCode {
    // `supervise console --config FILE`: the file's settings go under flags and environment.
    let parsed = supervise_settings::parse(Cli::command(), std::env::args_os().collect(), OWN_ENV)
        .and_then(|layered| {
            if layered.print_requested() {
                return Ok(Err(layered.describe()));
            }
            Ok(Ok(Cli::from_arg_matches(&layered.matches)?))
        });
    let cli = match parsed {
        Ok(Ok(cli)) => cli,
        Ok(Err(settings)) => {
            print!("{settings}");
            return ExitCode::from(exit::SUCCESS);
        }
        Err(supervise_settings::SettingsError::Clap(err)) => {
            // --help and --version arrive here too, printed on stdout; a closed pipe is fine.
            let _ = err.print();
            let code = if err.use_stderr() {
                exit::USAGE
            } else {
                exit::SUCCESS
            };
            return ExitCode::from(code);
        }
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|rt| rt.block_on(run(cli, &mut out)));
    match result {
        Ok(()) => ExitCode::from(exit::SUCCESS),
        Err(err) if exit::is_broken_pipe(&err) => ExitCode::from(exit::SUCCESS),
        Err(err) if err.downcast_ref::<exit::NotAllowed>().is_some() => {
            ExitCode::from(exit::REFUSED)
        }
        Err(err) if err.downcast_ref::<exit::Usage>().is_some() => {
            eprintln!("error: {}", exit::message(&err));
            ExitCode::from(exit::USAGE)
        }
        Err(err) => {
            eprintln!("error: {}", exit::message(&err));
            ExitCode::from(exit::REFUSED)
        }
    }
}

async fn run(cli: Cli, out: &mut dyn Write) -> Result<()> {
    if let Command::Completions { shell } = cli.command {
        let mut buf = Vec::new();
        clap_complete::generate(shell, &mut Cli::command(), "supervise", &mut buf);
        out.write_all(&buf)?;
        out.flush()?;
        return Ok(());
    }
    if let Command::Audit {
        action:
            Some(AuditCommand::Verify {
                archive: Some(file),
                json,
                ..
            }),
        ..
    } = &cli.command
    {
        return cmd::audit_verify::archive_file(file, *json, out);
    }
    let db = config::db_setting(cli.db.as_deref(), cli.db_file.as_deref())?;
    let ctx = Ctx {
        db: db.db,
        db_file: db.file,
        host: cli.host_id,
        operator: cli.operator.or_else(config::login_user),
        style: Style::detect(cli.color),
        width: render::output_width(),
    };
    if records_operator(&cli.command) {
        // Refused before the database is touched: a usage problem, not a refusal.
        ctx.actor()?;
    }
    match cli.command {
        Command::Completions { .. } => unreachable!("answered before the database is resolved"),
        Command::Bottle(BottleCommand::Add { slug, ip }) => {
            cmd::bottle::add(&ctx, &slug, ip, out).await
        }
        Command::Gate(GateCommand::Install {
            repo,
            bottle,
            remote,
            force,
        }) => cmd::gate::install(&ctx, &repo, &bottle, &remote, force, out).await,
        Command::Gate(GateCommand::PreReceive {
            bottle,
            remote,
            grace,
        }) => cmd::gate::pre_receive(&ctx, &bottle, &remote, grace).await,
        Command::Console(args) => cmd::console::run(&ctx, args, out).await,
        Command::Doctor {
            json,
            proxy_user,
            console_url,
        } => {
            cmd::doctor::run(
                &ctx,
                json,
                proxy_user.as_deref(),
                console_url.as_deref(),
                out,
            )
            .await
        }
        Command::Rules(RulesCommand::Check { file }) => cmd::rules::check(&file, out),
        Command::SquidAcl {
            propose_on_deny,
            record_use,
        } => {
            let options = cmd::egress_helper::Options {
                propose_on_deny,
                record_use,
                intercept: false,
            };
            cmd::squid::run(&ctx, options, out).await
        }
        Command::Decide {
            propose_on_deny,
            record_use,
        } => {
            let options = cmd::egress_helper::Options {
                propose_on_deny,
                record_use,
                intercept: true,
            };
            cmd::decide_line::run(&ctx, options, out).await
        }
        command => {
            let store = ctx.open().await?;
            let result = dispatch(&ctx, &store, command, out).await;
            store.close().await;
            result
        }
    }
}

/// Whether the command records the operator's name (a decision, a revoke, a bottle or
/// operator change), so it needs one.
fn records_operator(command: &Command) -> bool {
    match command {
        Command::Approve { bulk, .. } | Command::Reject { bulk, .. } => !bulk.dry_run,
        Command::Modify { .. }
        | Command::Revoke { .. }
        | Command::Bottle(BottleCommand::Add { .. } | BottleCommand::Rm { .. })
        | Command::Operator(
            OperatorCommand::Add { .. }
            | OperatorCommand::Link { .. }
            | OperatorCommand::Token { .. }
            | OperatorCommand::Rm { .. },
        )
        | Command::Rules(RulesCommand::Set { .. }) => true,
        _ => false,
    }
}

async fn dispatch(
    ctx: &Ctx,
    store: &supervise_store::Store,
    command: Command,
    out: &mut dyn Write,
) -> Result<()> {
    match command {
        Command::List(args) if args.watch => cmd::watch::run(ctx, store, &args, out).await,
        Command::List(args) => cmd::list::run(ctx, store, &args, out).await,
        Command::Show {
            id,
            json,
            diff,
            stat,
            resolve,
        } => {
            let shown = cmd::show::Shown {
                json,
                diff,
                stat,
                resolve,
            };
            cmd::show::run(ctx, store, &id, shown, out).await
        }
        Command::Approve {
            id,
            note,
            grant_for,
            yes,
            bulk,
        } => match id {
            Some(id) => {
                cmd::decide::one(
                    ctx,
                    store,
                    &id,
                    Action::Approve,
                    Decide {
                        note: note.as_deref(),
                        grant_for,
                        yes,
                    },
                    out,
                )
                .await
            }
            None => {
                cmd::decide::bulk(
                    ctx,
                    store,
                    &bulk,
                    Action::Approve,
                    Decide {
                        note: note.as_deref(),
                        grant_for,
                        yes,
                    },
                    out,
                )
                .await
            }
        },
        Command::Modify {
            id,
            change,
            note,
            grant_for,
            yes,
        } => {
            cmd::decide::one(
                ctx,
                store,
                &id,
                Action::Modify(change),
                Decide {
                    note: note.as_deref(),
                    grant_for,
                    yes,
                },
                out,
            )
            .await
        }
        Command::Reject { id, note, bulk } => match id {
            Some(id) => {
                let how = Decide {
                    note: note.as_deref(),
                    ..Decide::default()
                };
                cmd::decide::one(ctx, store, &id, Action::Reject, how, out).await
            }
            None => {
                cmd::decide::bulk(
                    ctx,
                    store,
                    &bulk,
                    Action::Reject,
                    Decide {
                        note: note.as_deref(),
                        ..Decide::default()
                    },
                    out,
                )
                .await
            }
        },
        Command::Bottle(BottleCommand::List { host, json }) => {
            cmd::bottle::list(ctx, store, host.as_deref(), json, out).await
        }
        Command::Bottle(BottleCommand::Rm { slug }) => {
            cmd::bottle::remove(ctx, store, &slug, out).await
        }
        Command::Operator(OperatorCommand::Add {
            name,
            role,
            bottles,
            console,
        }) => cmd::operator::add(ctx, store, &name, role, &bottles, &console.public_url, out).await,
        Command::Operator(OperatorCommand::Link { name, console, qr }) => {
            cmd::operator::link(ctx, store, &name, &console.public_url, qr, out).await
        }
        Command::Operator(OperatorCommand::Token { name }) => {
            cmd::operator::token(ctx, store, &name, out).await
        }
        Command::Operator(OperatorCommand::List { json }) => {
            cmd::operator::list(ctx, store, json, out).await
        }
        Command::Operator(OperatorCommand::Rm { name }) => {
            cmd::operator::remove(ctx, store, &name, out).await
        }
        Command::Rules(RulesCommand::Set { file, .. }) => {
            cmd::rules::set(ctx, store, file.as_deref(), out).await
        }
        Command::Rules(RulesCommand::Show { version, json }) => {
            cmd::rules::show(ctx, store, version, json, out).await
        }
        Command::Rules(RulesCommand::Test { file, since, json }) => {
            cmd::rules::test(ctx, store, &file, since, json, out).await
        }
        Command::Rules(RulesCommand::Check { .. }) => unreachable!("answered without a database"),
        Command::Bottle(BottleCommand::Add { .. })
        | Command::Completions { .. }
        | Command::Gate(_)
        | Command::Console(_)
        | Command::Doctor { .. }
        | Command::SquidAcl { .. }
        | Command::Decide { .. } => {
            unreachable!("handled before the database is opened")
        }
        Command::Policy {
            slug: None,
            host,
            json,
            ..
        } => cmd::policy::all(ctx, store, host.as_deref(), json, out).await,
        Command::Policy {
            slug: Some(slug),
            json,
            ..
        } => cmd::policy::show(ctx, store, &slug, json, out).await,
        Command::Check(CheckCommand::Egress {
            bottle,
            ip,
            target,
            method,
            path,
            json,
        }) => {
            let request = method.as_deref().zip(path.as_deref());
            let who = (bottle.as_deref(), ip);
            cmd::check::egress(ctx, store, who, &target, request, json, out).await
        }
        Command::Revoke { grant_id } => cmd::policy::revoke(ctx, store, &grant_id, out).await,
        Command::Backup { file } => cmd::backup::run(ctx, store, &file, out).await,
        Command::Audit {
            action: Some(AuditCommand::Verify { json, head, .. }),
            ..
        } => cmd::audit_verify::verify(store, head.as_deref(), json, out).await,
        Command::Audit {
            action: Some(AuditCommand::Head),
            ..
        } => cmd::audit_verify::head(store, out).await,
        Command::Audit {
            action: Some(AuditCommand::Archive { before, to }),
            ..
        } => cmd::audit_verify::archive(ctx, store, &before, &to, out).await,
        Command::Audit {
            action: None,
            bottle,
            host,
            json,
            filter,
        } => cmd::audit::run(ctx, store, host, bottle, json, filter, out).await,
    }
}
