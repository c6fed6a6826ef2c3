"""`netloom models ...`: the team's registered models, their versions and aliases."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def _model_text(model: dict[str, Any]) -> list[str]:
    aliases = ", ".join(f"{name} -> v{number}" for name, number in sorted((model.get("aliases") or {}).items()))
    lines = [f"model {model['id']} {model['name']!r}: latest version {model.get('latest_version') or '-'}"
             + (f"; {aliases}" if aliases else "")]
    for version in model.get("versions") or []:
        source = version["source"]
        where = f"run {source.get('run')}" + (f" checkpoint {source['checkpoint']}" if source.get("checkpoint") else "")
        named = f" [{', '.join(version['aliases'])}]" if version.get("aliases") else ""
        figures = ", ".join(f"{k}={v:.4g}" for k, v in sorted(version.get("metrics", {}).items())
                            if isinstance(v, int | float) and k.startswith(("val/", "test/")))
        lines.append(f"  v{version['number']}{named}: {where}" + (f"; {figures}" if figures else ""))
    for move in (model.get("history") or [])[:10]:
        lines.append(f"  {move['at']}: {move['alias']} {move['from_version'] or '-'} -> {move['to_version'] or '-'}"
                     f" by {move['actor']}"
                     + (f", approved by {move['approved_by']}" if move.get("approved_by") else "")
                     + (f" ({move['note']})" if move.get("note") else ""))
    return lines


def _approval_text(a: dict[str, Any]) -> str:
    """One request to move an alias, as a line."""
    state = "pending, stale (the alias moved since)" if a.get("stale") else a["status"]
    decided = f" by {a['decided_by']}" if a.get("decided_by") else ""
    return (f"request {a['id']}: {a['alias']} {a['from_version'] or '-'} -> {a['version']} asked by "
            f"{a['requested_by']}: {state}{decided}" + (f" ({a['note']})" if a.get("note") else ""))


def _formats_text(built: dict[str, Any]) -> list[str]:
    lines = []
    for name, f in built.items():
        if f.get("error"):
            lines.append(f"{name}: not built ({f['error']})")
            continue
        lat, base = f.get("latency_ms") or {}, f.get("fp32_latency_ms") or {}
        lines.append(f"{name}: {f['file']} {f['size'] / 1024:.1f} KiB; {f['metric']} {f['value']:.4f} "
                     f"({f['accuracy_delta']:+.4f} vs fp32); latency b1 {lat.get('b1')} ms (fp32 {base.get('b1')}), "
                     f"b64 {lat.get('b64')} ms (fp32 {base.get('b64')})")
    return lines


def add_model_commands(commands: Any, add: Callable[..., argparse.ArgumentParser],
                       team_option: Callable[[argparse.ArgumentParser], None], client: Callable[[Any], Any]) -> None:
    """The `models` command group (`client(args)` opens a logged-in Client)."""
    from netloom.cli.common import EXIT_OK, _table

    def cmd_list(args: argparse.Namespace, out: Any) -> int:
        with client(args) as c:
            models = c.models(team=args.team)
        rows = [{**m, "aliases": ", ".join(f"{k}=v{v}" for k, v in sorted((m.get("aliases") or {}).items()))}
                for m in models]
        out.result(models, _table(rows, ["id", "team", "name", "latest_version", "aliases"]))
        return EXIT_OK

    def cmd_show(args: argparse.Namespace, out: Any) -> int:
        with client(args) as c:
            model = c.model(args.model)
        out.result(model, _model_text(model))
        return EXIT_OK

    def cmd_create(args: argparse.Namespace, out: Any) -> int:
        with client(args) as c:
            model = c.model_create(args.name, team=args.team, description=args.description or "")
        out.result(model, f"model {model['id']} {model['name']!r} created")
        return EXIT_OK

    def cmd_register(args: argparse.Namespace, out: Any) -> int:
        with client(args) as c:
            version = c.model_register(args.model, args.run, checkpoint=args.checkpoint, note=args.note or "")
        out.result(version, f"version {version['number']} of model {args.model} from run {args.run}"
                   + (f" checkpoint {args.checkpoint}" if args.checkpoint else ""))
        return EXIT_OK

    def cmd_alias(args: argparse.Namespace, out: Any) -> int:
        from netloom.errors import NetloomError

        if args.version is None and not args.drop:
            raise NetloomError("give the version to point the alias at, or --drop")
        with client(args) as c:
            model = c.model_alias(args.model, args.alias, None if args.drop else args.version, note=args.note or "")
        text = f"{args.alias} dropped" if args.drop else f"{args.alias} -> version {args.version}"
        if model and "approval" in model:
            text = _approval_text(model["approval"]) + "; another admin of the team approves it"
        out.result(model or {"alias": args.alias, "dropped": True}, text)
        return EXIT_OK

    def cmd_approvals(args: argparse.Namespace, out: Any) -> int:
        with client(args) as c:
            approvals = c.model_approvals(args.model, status=None if args.all else "pending")
        out.result(approvals, [_approval_text(a) for a in approvals] or ["no pending requests"])
        return EXIT_OK

    def cmd_approve(args: argparse.Namespace, out: Any) -> int:
        with client(args) as c:
            approval = c.model_approve(args.model, args.approval, reject=args.reject)
        out.result(approval, _approval_text(approval))
        return EXIT_OK

    def cmd_formats(args: argparse.Namespace, out: Any) -> int:
        import sys

        from tqdm import tqdm

        formats = [f.strip() for f in args.formats.split(",") if f.strip()]
        with client(args) as c, tqdm(
            total=100, desc=f"building {', '.join(formats)} of model {args.model} v{args.version}",
            file=sys.stderr, disable=out.json, bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix} {elapsed}",
        ) as bar:  # fmt: skip
            def moved(job: Any) -> None:
                done = round(100 * float(job.get("progress") or 0))
                if done > bar.n:
                    bar.update(done - bar.n)
                bar.set_postfix_str(job["state"])

            built = c.model_formats(args.model, args.version, formats, progress=moved)
        out.result(built, _formats_text(built))
        return EXIT_OK

    def cmd_kserve(args: argparse.Namespace, out: Any) -> int:
        with client(args) as c:
            manifest = c.model_kserve(args.model, args.version, yaml=not out.json)
        out.result(manifest, str(manifest).rstrip("\n"))
        return EXIT_OK

    models = commands.add_parser(
        "models", help="the model registry: models, versions from runs, aliases (production, staging)"
    ).add_subparsers(dest="action", required=True, metavar="ACTION")
    listed = add(models, "list", cmd_list, "your teams' registered models")
    team_option(listed)
    show = add(models, "show", cmd_show, "a model's versions, aliases and alias history")
    show.add_argument("model", type=int)
    create = add(models, "create", cmd_create, "register a new model name in a team")
    create.add_argument("name")
    create.add_argument("--description")
    team_option(create)
    register = add(models, "register", cmd_register, "make a run's weights the model's next version")
    register.add_argument("model", type=int)
    register.add_argument("--run", type=int, required=True)
    register.add_argument("--checkpoint", metavar="NAME", help="a kept checkpoint (best, epoch-0003); default: final")
    register.add_argument("--note")
    alias = add(models, "alias", cmd_alias, "point an alias at a version (production: a team admin, or a request "
                "another admin approves when the team asks for approval)")
    alias.add_argument("model", type=int)
    alias.add_argument("alias", help="e.g. production, staging")
    alias.add_argument("version", type=int, nargs="?")
    alias.add_argument("--drop", action="store_true", help="remove the alias")
    alias.add_argument("--note", help="why (kept in the history)")
    approvals = add(models, "approvals", cmd_approvals, "requests to move production waiting for a second admin")
    approvals.add_argument("model", type=int)
    approvals.add_argument("--all", action="store_true", help="approved and rejected ones too")
    approve = add(models, "approve", cmd_approve, "approve a request to move production (another admin's)")
    approve.add_argument("model", type=int)
    approve.add_argument("approval", type=int, help="the request's id (netloom models approvals MODEL)")
    approve.add_argument("--reject", action="store_true", help="reject it instead (or withdraw your own)")
    formats = add(models, "formats", cmd_formats,
                  "build a version's .pt2 / int8 / AOTInductor files, with accuracy and latency against fp32")
    formats.add_argument("model", type=int)
    formats.add_argument("version", type=int)
    formats.add_argument("--formats", default="pt2,int8", help="comma-separated: pt2, int8, aoti (default pt2,int8)")
    kserve = add(models, "kserve", cmd_kserve, "the KServe InferenceService of a version (YAML; JSON with --json)")
    kserve.add_argument("model", type=int)
    kserve.add_argument("version", type=int)
