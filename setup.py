"""The package list, which pyproject.toml alone cannot express.

Every package under newt/ is found automatically (each directory has an
__init__.py; tests/e2e/packaging/test_packaging.py checks that), plus
newt.assets, which lives in assets/ at the top of the repo (mapped in
pyproject.toml). Everything else about the build is in pyproject.toml.
"""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["newt", "newt.*"]), "newt.assets"])
