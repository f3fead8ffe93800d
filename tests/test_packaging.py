"""pyproject.toml is the single list of dependencies; environment.yml must install the same."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml  # installed with jupyterlab (jupyter-events depends on it)
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parent.parent
# conda-forge names that differ from the PyPI names in pyproject.toml.
CONDA_TO_PYPI = {"pytorch": "torch"}
# conda-only entries that are the environment itself, not a dependency of the package.
CONDA_ENVIRONMENT = {"python", "pip"}


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _requirements(lines) -> dict[str, str]:
    """name -> normalised specifier (e.g. ``'==2.13.0'``; ``''`` when unpinned)."""
    out = {}
    for line in lines:
        req = Requirement(line)
        out[canonicalize_name(req.name)] = str(req.specifier)
    return out


def _conda_entry(entry: str) -> tuple[str, str]:
    """``'pytorch=2.13.0'`` -> ``('torch', '==2.13.0')``; ``'numpy>=1.26'`` stays as it is."""
    match = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*(.*?)\s*", entry.split("::")[-1])
    assert match, entry
    name, spec = match.groups()
    if re.fullmatch(r"=[^=].*", spec):
        spec = "=" + spec  # conda's single '=' is a version prefix; pins here are exact versions
    name = CONDA_TO_PYPI.get(name.lower(), name)
    return canonicalize_name(name), str(Requirement(f"x{spec}").specifier) if spec else ""


def _environment() -> tuple[dict[str, str], list[str]]:
    """Dependencies listed by environment.yml (conda part + pip part) and its pip path entries."""
    path = ROOT / "environment.yml"
    if not path.is_file():
        pytest.fail("environment.yml is missing; it must install the dependencies of pyproject.toml")
    env = yaml.safe_load(path.read_text(encoding="utf-8"))
    deps: dict[str, str] = {}
    local: list[str] = []
    for entry in env.get("dependencies", []):
        if isinstance(entry, dict):
            for line in entry.get("pip", []):
                line = line.strip()
                # "-e .", ".[test]", "-r file": the project itself, not a separate dependency list.
                if line.startswith(("-e", ".", "/", "-r")):
                    local.append(line)
                    continue
                deps.update(_requirements([line]))
        else:
            name, spec = _conda_entry(str(entry))
            if name not in CONDA_ENVIRONMENT:
                deps[name] = spec
    return deps, local


def test_environment_lists_the_pyproject_dependencies():
    project = _pyproject()["project"]
    declared = _requirements(project["dependencies"])
    extras = {}
    for lines in project.get("optional-dependencies", {}).values():
        extras.update(_requirements(lines))
    listed, _ = _environment()

    missing = sorted(set(declared) - set(listed))
    assert not missing, f"environment.yml lacks {missing} (declared in pyproject.toml)"
    different = {n: (declared[n], listed[n]) for n in declared if listed[n] != declared[n]}
    assert not different, f"version specifiers differ (pyproject, environment.yml): {different}"
    unknown = sorted(set(listed) - set(declared) - set(extras))
    assert not unknown, f"environment.yml installs {unknown}, which pyproject.toml does not declare"
    for name in set(listed) & set(extras):
        assert listed[name] == extras[name], f"{name}: {extras[name]!r} in pyproject, {listed[name]!r} in environment.yml"


def test_environment_python_matches_requires_python():
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8")) if (ROOT / "environment.yml").is_file() else None
    if env is None:
        pytest.fail("environment.yml is missing")
    pythons = [str(e) for e in env.get("dependencies", []) if isinstance(e, str) and re.match(r"python\b", e)]
    assert pythons, "environment.yml should pin python"
    versions = re.findall(r"3\.(\d+)", pythons[0])
    requires = _pyproject()["project"]["requires-python"]
    low, high = (int(v) for v in re.findall(r"3\.(\d+)", requires)[:2])
    assert versions and low <= int(versions[0]) < high, (pythons[0], requires)


def test_package_data_ships_the_report_template():
    data = _pyproject()["tool"]["setuptools"]["package-data"]["toymech"]
    assert "templates/**/*" in data
    template = ROOT / "toymech" / "templates" / "toymech_report"
    assert (template / "index.html.j2").is_file() and (template / "conf.json").is_file()


def test_console_script_declared():
    assert _pyproject()["project"]["scripts"]["toymech"] == "toymech.cli:main"


def test_the_license_is_an_spdx_string_for_the_build_backend():
    """``project.license`` as a TOML table makes setuptools warn on every install that such
    builds stop working after 2027-02-18; an SPDX string needs setuptools >= 77 to build."""
    data = _pyproject()
    license_ = data["project"]["license"]
    assert isinstance(license_, str) and re.fullmatch(r"[A-Za-z0-9.\-+ ()]+", license_), license_
    backend = [Requirement(r) for r in data["build-system"]["requires"]]
    setuptools = next(r for r in backend if canonicalize_name(r.name) == "setuptools")
    assert not setuptools.specifier.contains("76.9") and setuptools.specifier.contains("77.0"), setuptools


# --------------------------------------------------------------------------------------------
# The lock: constraints.txt pins every distribution an install of toymech[test] needs
# --------------------------------------------------------------------------------------------

def _lock() -> dict[str, str]:
    """constraints.txt as name -> exact version (every line ``name==version``)."""
    pins = {}
    for number, line in enumerate((ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        req = Requirement(line)
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == "==", f"constraints.txt:{number}: {line!r} is not name==version"
        pins[canonicalize_name(req.name)] = specs[0].version
    return pins


def _closure(roots: list[str], extras: set[str]) -> set[str]:
    """Every distribution installed here that ``roots`` need, transitively (extras taken only
    for the roots; a requirement whose marker does not apply here is left out)."""
    from importlib import metadata

    seen: set[str] = set()
    todo = [(r, extras) for r in roots]
    while todo:
        line, want = todo.pop()
        req = Requirement(line)
        name = canonicalize_name(req.name)
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in (want or {""})):
            continue
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(req.name) or []
        except metadata.PackageNotFoundError:
            continue  # the test below names what is not pinned; an absent optional one is fine
        todo.extend((r, set(req.extras)) for r in requires)
    return seen


def test_the_lock_pins_every_dependency_within_pyproject():
    project = _pyproject()["project"]
    pins = _lock()
    declared = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        declared += extra
    for line in declared:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        assert name in pins, f"constraints.txt pins no version of {name} (pyproject: {line!r}); run ./run.sh lock"
        assert req.specifier.contains(pins[name], prereleases=True), \
            f"constraints.txt pins {name}=={pins[name]}, outside pyproject's {line!r}"
    assert pins["torch"] == "2.13.0", "torch's pin carries no build label (+cpu), so a GPU box takes CUDA's"
    # Transitively: nothing an install of toymech[test] pulls in is left to the newest release.
    needed = _closure(declared, set()) - {"toymech"}
    missing = sorted(needed - set(pins))
    assert missing == [], f"constraints.txt misses {missing}: run ./run.sh lock"


def test_run_sh_installs_from_the_lock_unless_asked_for_the_latest():
    script = (ROOT / "run.sh").read_text(encoding="utf-8")
    assert "-c $ROOT/constraints.txt" in script and "constraints.txt" in script.split("want=")[1].split("\n")[0]
    assert "--latest" in script and "--upgrade-strategy eager" in script
    assert "--latest" not in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
