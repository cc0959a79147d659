"""forge.testing needs hypothesis (a dev extra) only to run a property, not to be imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap

WITHOUT_HYPOTHESIS = textwrap.dedent(
    """
    import sys

    sys.modules["hypothesis"] = None  # `import hypothesis` now raises ImportError

    import forge.testing
    import forge.testing.check
    from forge.testing import assert_preserves_semantics, check_pattern, copy_weights
    from forge.transforms.dce import DcePass

    try:
        check_pattern(DcePass())
    except ImportError as e:
        print(e)
    """
)


def test_forge_testing_imports_without_hypothesis_and_says_what_check_pattern_needs():
    result = subprocess.run([sys.executable, "-c", WITHOUT_HYPOTHESIS], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "check_pattern needs hypothesis" in result.stdout


def test_check_pattern_is_public_in_forge_testing():
    import forge.testing
    from forge.testing import check_pattern
    from forge.testing.check import check_pattern as defined

    assert check_pattern is defined
    assert "check_pattern" in forge.testing.__all__
    assert "check_pattern" in (forge.testing.__doc__ or "")
