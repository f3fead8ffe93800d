#!/usr/bin/env bash
# toymech's two commands (and one for exploring, one to set up only):
#   ./run.sh report [--size smoke|default|paper] [--seeds N] [--device auto|cpu|cuda] [--seed N]
#        [--code]  set up the environment if needed, execute every notebook with papermill (a
#        live line each), write HTML reports (--code: with the code) + executed notebooks to reports/
#   ./run.sh test [--quick] [pytest args]  set up the environment if needed, run the test suite
#        (--quick: the quick tier, without notebooks, browsers, Sphinx, kills and Ray)
#   ./run.sh lab                     open the notebooks in JupyterLab
#   ./run.sh docs [OUT]              build the documentation site (offline) into OUT (build/docs)
#   ./run.sh setup                   only set up the environment (what the others do first)
#   ./run.sh lock                    write constraints.txt from the environment's versions
# Environment: .venv (default, needs Python 3.10-3.12 as $PYTHON or python3), or the conda
# environment from environment.yml in .conda-env when TOYMECH_CONDA=1. Installs take the versions
# in constraints.txt (the ones the suite last passed with). `./run.sh --latest CMD` (or
# TOYMECH_LATEST=1) resolves the newest versions pyproject.toml allows instead, in .venv-latest.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)

LATEST="${TOYMECH_LATEST:-0}"
if [ "${1:-}" = --latest ]; then LATEST=1; shift; fi
if [ "${2:-}" = --latest ]; then LATEST=1; set -- "$1" "${@:3}"; fi

env_dir() {
  if [ "${TOYMECH_CONDA:-0}" = 1 ]; then echo "$ROOT/.conda-env"
  elif [ "$LATEST" = 1 ]; then echo "$ROOT/.venv-latest"
  else echo "$ROOT/.venv"; fi
}

# pip's arguments for the versions: the lock (constraints.txt), or, with --latest, the newest
# versions pyproject.toml allows (the way to meet the next upstream release on purpose).
pin_args() {
  if [ "$LATEST" = 1 ]; then echo "--upgrade --upgrade-strategy eager"; else echo "-c $ROOT/constraints.txt"; fi
}

ensure_env() {
  local dir stamp want
  dir=$(env_dir)
  stamp="$dir/.toymech-installed"
  want=$( (cat pyproject.toml environment.yml constraints.txt; echo "latest=$LATEST") | sha256sum | cut -c1-16)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  if [ "${TOYMECH_CONDA:-0}" = 1 ]; then
    command -v conda >/dev/null || { echo "run.sh: TOYMECH_CONDA=1 but conda is not on PATH" >&2; exit 2; }
    conda env update --prefix "$dir" --file environment.yml --prune
    # shellcheck disable=SC2046
    "$dir/bin/python" -m pip install $(pin_args) -e ".[test]"
  else
    local py="${PYTHON:-python3}"
    "$py" - <<'PY' || { echo "run.sh: toymech needs Python 3.10-3.12 (set PYTHON=/path/to/python3.11)" >&2; exit 2; }
import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] <= (3, 12) else 1)
PY
    [ -x "$dir/bin/python" ] || "$py" -m venv "$dir"
    "$dir/bin/python" -m pip install -q --upgrade pip $(pin_args)
    # torch is pinned (torch==2.13.0) in pyproject.toml. pip does not detect hardware: from
    # PyPI, Linux x86-64 gets the CUDA build (with its nvidia-* libraries), macOS and Windows
    # the CPU one. A torch 2.13.0 already in the environment (e.g. the CPU build from PyTorch's
    # own index, docs/getting-started.md "Which torch") satisfies the pin and is kept. The lock
    # was written on Python 3.11 (CI's and environment.yml's); on another Python a locked
    # version may not exist, and pip says which.
    # shellcheck disable=SC2046
    "$dir/bin/python" -m pip install -q $(pin_args) -e ".[test]"
  fi
  echo "$want" > "$stamp"
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
  report)
    ensure_env
    # All notebooks at once, one torch thread each: the studies' tiny models run fastest on one
    # thread, and the notebooks then share the cores instead of queueing (--jobs 1 to queue).
    # Every other option (--size, --seeds N, --code, ...) passes through to `toymech report`.
    n=$(ls notebooks/*.ipynb | wc -l)
    PATH="$(env_dir)/bin:$PATH" exec "$(env_dir)/bin/python" -m toymech report --jobs "$n" "$@" ;;
  test)
    ensure_env
    # One pytest worker per usable core (TOYMECH_TEST_WORKERS overrides; 1 runs in-process);
    # each worker then uses one torch thread. Tests sharing the executed notebooks stay on one
    # worker (loadgroup). Later pytest arguments win (e.g. -n 0).
    workers="${TOYMECH_TEST_WORKERS:-$("$(env_dir)/bin/python" -c 'import os; print(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())')}"
    if [ "$workers" -gt 1 ] 2>/dev/null; then set -- -n "$workers" --dist loadgroup "$@"; fi
    PATH="$(env_dir)/bin:$PATH" exec "$(env_dir)/bin/python" -m pytest "$@" ;;
  setup)
    ensure_env
    echo "run.sh: the environment is ready in $(env_dir); ./run.sh report, test or lab use it" ;;
  docs)
    ensure_env
    # The site from docs/ (Sphinx + MyST + furo), strict: a broken link, a page in no toctree or
    # an undocumented public function is an error. Nothing is fetched (no intersphinx, no CDN).
    out="${1:-build/docs}"
    "$(env_dir)/bin/python" -m sphinx -W --keep-going -b html docs "$out"
    echo "run.sh: the site is in $out (open $out/index.html)" ;;
  lock)
    ensure_env
    # Every installed distribution but toymech itself, torch without its build label (+cpu), so
    # that the same lock takes the CUDA build on a GPU machine.
    { echo "# The versions ./run.sh installs (pip -c): written by ./run.sh lock on Python $("$(env_dir)/bin/python" -c 'import platform; print(platform.python_version())'),"
      echo "# $(date -u +%Y-%m-%d). ./run.sh --latest test resolves the newest allowed versions instead."
      "$(env_dir)/bin/python" -m pip freeze --all --exclude-editable | grep -v '^toymech' | sed -E 's/^(torch==[^+]+)\+.*/\1/'
    } > constraints.txt.tmp && mv constraints.txt.tmp constraints.txt
    echo "run.sh: wrote constraints.txt ($(grep -vc '^#' constraints.txt) pins)" ;;
  lab)
    ensure_env
    PATH="$(env_dir)/bin:$PATH" exec "$(env_dir)/bin/python" -m toymech lab "$@" ;;
  *)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    [ -z "$cmd" ] || [ "$cmd" = help ] || [ "$cmd" = --help ] || exit 2 ;;
esac
