"""What ``get_android_recipe()`` does when called as is, without letting it reach the network.

Called as is, ExecuTorch 1.5.1's ``get_android_recipe()`` installs Qualcomm's QNN SDK from the network. The
export-recipes page says so; :func:`default_android_call` replaces the installer with one that only notes it
was asked and fails as an offline download does, calls the function, and puts everything back.
"""

from __future__ import annotations

import os


def default_android_call() -> tuple[list[str], BaseException | None]:
    """``(installer calls, what get_android_recipe() raised)`` with ``QNN_SDK_ROOT`` unset."""
    from executorch.backends.qualcomm.utils import qnn_sdk_setup
    from executorch.export.target_recipes import get_android_recipe

    install_calls: list[str] = []
    real_install = qnn_sdk_setup._install_qnn_sdk
    qnn_sdk_setup._install_qnn_sdk = lambda: install_calls.append("install") or False
    saved_root = os.environ.pop("QNN_SDK_ROOT", None)
    raised = None
    try:
        get_android_recipe()
    except Exception as error:  # noqa: BLE001 - the probe records whatever it raises
        raised = error
    finally:
        qnn_sdk_setup._install_qnn_sdk = real_install
        if saved_root is not None:
            os.environ["QNN_SDK_ROOT"] = saved_root
    return install_calls, raised
