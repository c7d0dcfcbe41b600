"""Framework environments layered on another's packages (`FrameworkSpec.packages_from`).

torch with its CUDA libraries takes about 6 GB; keras-torch, keras-jax and horovod see the pytorch
environment's copy beneath their own instead of installing it again, which keeps `make test`'s
environments within a CI machine's disk.
"""

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import framework_python

from mgbench.frameworks.registry import registered
from mgbench.runner.launch import VENVS_ENV, environment_python
from mgbench.runner.venvs import LAYER_FILE, layer_environment, requirements_file, site_packages

SHOW_ORIGIN = "import marker; print(marker.ORIGIN)"


def bare_environment(spec) -> str:
    interpreter = environment_python(spec)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(interpreter.parent.parent)], check=True)
    return str(interpreter)


def put_marker(interpreter: str, origin: str) -> None:
    _, sites = site_packages(interpreter)
    Path(sites[0], "marker.py").write_text(f"ORIGIN = {origin!r}\n")


def origin_seen(interpreter: str) -> str:
    return subprocess.run([interpreter, "-c", SHOW_ORIGIN], capture_output=True, text=True, check=True).stdout.strip()


def test_layered_environment_sees_the_lower_packages_and_shadows_them_with_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv(VENVS_ENV, str(tmp_path))
    lower_spec = registered()["pytorch"]
    upper_spec = dataclasses.replace(registered()["keras-torch"], environment="upper", packages_from="pytorch")
    lower, upper = bare_environment(lower_spec), bare_environment(upper_spec)
    put_marker(lower, "lower")

    added = layer_environment(upper_spec, upper)

    assert added == site_packages(lower)[1]
    assert origin_seen(upper) == "lower"
    put_marker(upper, "upper")
    assert origin_seen(upper) == "upper"
    assert origin_seen(lower) == "lower"


def test_an_environment_without_packages_from_gets_no_layer(tmp_path, monkeypatch):
    monkeypatch.setenv(VENVS_ENV, str(tmp_path))
    spec = dataclasses.replace(registered()["gluon"], environment="alone", packages_from=None)
    interpreter = bare_environment(spec)

    assert layer_environment(spec, interpreter) == []
    assert not any(Path(site, LAYER_FILE).exists() for site in site_packages(interpreter)[1])


@pytest.mark.parametrize("framework", ["keras-torch", "keras-jax"])
def test_a_layered_environment_uses_the_pytorch_environments_torch_rather_than_a_copy(framework):
    """As built (`make test` rebuilds an environment whose requirements changed, anew)."""
    own = Path(framework_python(framework)).parent.parent.resolve()
    lower = Path(framework_python("pytorch")).parent.parent.resolve()
    torch_file = subprocess.run(
        [framework_python(framework), "-c", "import torch; print(torch.__file__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()

    assert Path(torch_file).resolve().is_relative_to(lower)
    assert not Path(torch_file).resolve().is_relative_to(own)


def pins(requirements: Path) -> set[str]:
    """The distributions a requirements file names, those of the files it includes (`-r`) too."""
    names = set()
    for line in requirements.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("-r "):
            names |= pins(requirements.parent / line.removeprefix("-r ").strip())
        elif line and not line.startswith("-"):
            names.add(re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower())
    return names


def test_no_two_environments_install_their_own_torch():
    """torch with its CUDA libraries is about 6 GB: every environment that needs it but the pytorch
    framework's own takes it from there (`packages_from`), keras-jax's `--decode gpu` included."""
    specs = registered().values()
    torch_holders = {spec.environment for spec in specs if "torch" in pins(requirements_file(spec))}
    assert {"pytorch", "keras-torch", "keras-jax", "horovod"} <= torch_holders
    own_copy = {
        spec.environment for spec in specs if spec.environment in torch_holders and spec.packages_from != "pytorch"
    }
    assert own_copy == {"pytorch"}


QUIETLY = Path(__file__).resolve().parent.parent / "scripts" / "quietly.sh"


def test_a_set_up_step_is_one_line_its_output_in_a_log_and_a_failure_shows_the_logs_end(tmp_path):
    log = tmp_path / "logs" / "env.log"
    chatty = ["sh", "-c", "for i in $(seq 1 500); do echo pip line $i; done"]
    done = subprocess.run([str(QUIETLY), "env", str(log), *chatty], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(rf"env: setting up \(log: {re.escape(str(log))}\) \.\.\. done in \d+ s\n", done.stdout)
    assert log.read_text().splitlines()[-1] == "pip line 500" and done.stderr == ""
    failing = ["sh", "-c", "for i in $(seq 1 500); do echo pip line $i; done; exit 3"]
    done = subprocess.run([str(QUIETLY), "env", str(log), *failing], capture_output=True, text=True)
    assert done.returncode == 3
    assert "failed (exit code 3)" in done.stdout and done.stdout.rstrip().endswith("pip line 500")
    assert "pip line 400" not in done.stdout


def test_make_demo_and_make_test_build_every_environment_through_quietly():
    """`make -n`: every command that installs (pip, mgbench setup) is run by scripts/quietly.sh."""
    root = QUIETLY.parent.parent
    for target in ("demo", "test"):
        planned = subprocess.run(
            ["make", "-n", "-B", target], cwd=root, capture_output=True, text=True, check=True
        ).stdout
        commands = re.sub(r"\\\n\s*", " ", planned).splitlines()
        installs = [line for line in commands if "pip install" in line or "mgbench setup" in line]
        assert installs and all(line.startswith("scripts/quietly.sh ") for line in installs), installs
