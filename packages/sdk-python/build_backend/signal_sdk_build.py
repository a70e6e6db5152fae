"""PEP 517 backend: setuptools.build_meta, plus a wheel writer for setuptools without bdist_wheel.

setuptools before 70.1 builds wheels only with the separate `wheel` package. With a package
registry, pip's build isolation installs it; with `--no-build-isolation` on a machine without a
registry it may be missing, and `pip install ./packages/sdk-python` would fail. The package is
pure Python, so its wheel is a zip of setuptools' own build output (build_py) and metadata
(egg_info) with the dist-info files PEP 427 asks for. Wherever bdist_wheel exists, every hook is
setuptools' own.
"""

import base64
import csv
import email.parser
import hashlib
import io
import os
import re
import subprocess
import sys
import tempfile
import zipfile

import setuptools
from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403  (every hook setuptools defines)


# setuptools reads the [project] table from 61 on; an older one builds a package named UNKNOWN
# (pip's --no-build-isolation does not check build requirements), so refuse it by name.
if int(setuptools.__version__.split(".")[0]) < 61:
    raise RuntimeError(
        f"signal-sdk needs setuptools >= 61 to build (this Python has {setuptools.__version__}): "
        "python -m pip install 'setuptools>=61', or install without --no-build-isolation"
    )


def _has_bdist_wheel():
    try:
        from setuptools.command.bdist_wheel import bdist_wheel  # noqa: F401  (setuptools >= 70.1)

        return True
    except ImportError:
        pass
    try:
        import wheel.bdist_wheel  # noqa: F401

        return True
    except ImportError:
        return False


def _record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _build_pure_wheel(wheel_directory):
    with tempfile.TemporaryDirectory() as tmp:
        egg_base = os.path.join(tmp, "egg")
        lib = os.path.join(tmp, "lib")
        os.makedirs(egg_base)
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import setuptools; setuptools.setup()",
                "-q",
                "egg_info",
                "--egg-base",
                egg_base,
                "build_py",
                "--build-lib",
                lib,
            ],
            check=True,
        )
        (egg_info,) = [d for d in os.listdir(egg_base) if d.endswith(".egg-info")]
        with open(os.path.join(egg_base, egg_info, "PKG-INFO"), "rb") as f:
            metadata = f.read()
        headers = email.parser.BytesParser().parsebytes(metadata, headersonly=True)
        name = re.sub(r"[-_.]+", "_", str(headers["Name"])).lower()
        version = str(headers["Version"])
        dist_info = f"{name}-{version}.dist-info"
        wheel_name = f"{name}-{version}-py3-none-any.whl"

        files = []
        for root, _dirs, names in os.walk(lib):
            for n in sorted(names):
                full = os.path.join(root, n)
                with open(full, "rb") as f:
                    files.append((os.path.relpath(full, lib).replace(os.sep, "/"), f.read()))
        files.append((f"{dist_info}/METADATA", metadata))
        files.append(
            (
                f"{dist_info}/WHEEL",
                b"Wheel-Version: 1.0\nGenerator: signal_sdk_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
            )
        )
        record = io.StringIO()
        writer = csv.writer(record, lineterminator="\n")
        for path, data in files:
            writer.writerow([path, _record_hash(data), str(len(data))])
        writer.writerow([f"{dist_info}/RECORD", "", ""])
        files.append((f"{dist_info}/RECORD", record.getvalue().encode("utf-8")))

        os.makedirs(wheel_directory, exist_ok=True)
        with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as zf:
            for path, data in files:
                zf.writestr(path, data)
        return wheel_name


if not _has_bdist_wheel():
    # Without prepare_metadata_for_build_wheel, pip reads the metadata from the built wheel.
    globals().pop("prepare_metadata_for_build_wheel", None)
    globals().pop("prepare_metadata_for_build_editable", None)

    def get_requires_for_build_wheel(config_settings=None):
        return []

    def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
        return _build_pure_wheel(wheel_directory)

    def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
        # An editable install also needs bdist_wheel; install the package normally instead.
        raise RuntimeError(
            "editable installs need setuptools >= 70.1 or the `wheel` package; "
            "use `pip install ./packages/sdk-python` (not -e)"
        )
else:
    build_wheel = _setuptools.build_wheel
