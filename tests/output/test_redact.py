from __future__ import annotations

import subprocess
import sys

import pytest

from fixer.output.redact import redact

# The frame lines as a Linux venv, a pyenv install and a Windows venv print them.
TRACE = """\
  File "/home/alice/proj/train.py", line 12, in <module>
  File "/home/alice/proj/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1775, in _call_impl
  File "/opt/conda/lib/python3.10/dist-packages/accelerate/hooks.py", line 170, in new_forward
  File "C:\\Users\\bob\\venv\\Lib\\site-packages\\torch\\functional.py", line 402, in einsum
"""


def test_home_and_installed_packages_are_redacted():
    out = redact(TRACE, home="/home/alice", package_dirs=())
    assert 'File "HOME:/proj/train.py"' in out
    assert 'File "SITE-PACKAGES:/torch/nn/modules/module.py"' in out
    assert 'File "SITE-PACKAGES:/accelerate/hooks.py"' in out
    assert 'File "SITE-PACKAGES:\\torch\\functional.py"' in out
    assert "alice" not in out and "bob" not in out


def test_a_home_that_is_a_prefix_of_another_name_is_that_other_home():
    assert redact("/home/alicex/run.py", home="/home/alice", package_dirs=(), names=()) == "HOME:/run.py"


def test_this_interpreters_package_folder_is_redacted():
    import torch

    assert redact(torch.__file__, home="/nonexistent").startswith("SITE-PACKAGES:")


# A training job's log as a launcher prints it, with each kind of secret a log carries, around a traceback
# whose frames sit in a home, on a shared mount and in a Windows venv; the secrets are made up, in the
# shapes their services issue.
SECRETS = {
    "user": "alice",
    "other_user": "bob",
    "host": "gpu-node-17",
    "team_mount": "team-vision",
    "hf_token": "hf_QwErTyUiOpAsDfGhJkLzXcVbNm123456",
    "github_token": "ghp_0123456789abcdefABCDEF0123456789abcd",
    "aws_key_id": "AKIAIOSFODNN7EXAMPLE",
    "url_signature": "9f86d081884c7d659a2feaa0c55ad015",
    "url_password": "hunter2hunter2",
    "wandb_key": "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567",
    "email": "alice.smith@example-lab.org",
}
LOG = (
    f"{SECRETS['user']}@{SECRETS['host']}:~/proj$ HF_TOKEN={SECRETS['hf_token']} torchrun train.py\n"
    f"export WANDB_API_KEY={SECRETS['wandb_key']}\n"
    f"git remote: https://{SECRETS['user']}:{SECRETS['url_password']}@git.example.com/vision.git\n"
    f"Downloading https://bucket.s3.amazonaws.com/ckpt.pt?X-Amz-Credential={SECRETS['aws_key_id']}"
    f"%2F20240101&X-Amz-Signature={SECRETS['url_signature']}\n"
    + "".join(f"step {i} loss 0.{i:03d} lr 1e-4\n" for i in range(300))
    + f"Run by {SECRETS['email']} with token {SECRETS['github_token']}\n"
    "Traceback (most recent call last):\n"
    f'  File "/home/{SECRETS["user"]}/proj/train.py", line 88, in <module>\n'
    "    loss = model(batch)\n"
    f'  File "/mnt/{SECRETS["team_mount"]}/shared/loader.py", line 12, in collate\n'
    "    return torch.stack(items)\n"
    f'  File "C:\\Users\\{SECRETS["other_user"]}\\venv\\Lib\\site-packages\\torch\\nn\\modules\\module.py", line 1501,'
    " in _call_impl\n"
    "    return forward_call(*args, **kwargs)\n"
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
    f"{SECRETS['user']}@{SECRETS['host']}:~/proj$ \n"
)


def test_a_log_with_every_kind_of_secret_gives_a_report_with_none_of_them(tmp_path):
    """The report holds the traceback and the facts only; no secret of the log, nor the log, survives."""
    log = tmp_path / "train.log"
    log.write_text(LOG)
    done = subprocess.run(
        [sys.executable, "-m", "fixer", "diagnose", "--traceback", str(log), "--markdown", "--redact"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = done.stdout
    assert [name for name, secret in SECRETS.items() if secret.lower() in report.lower()] == []
    assert "step 17 loss" not in report and "torchrun train.py" not in report
    assert 'File "HOME:/proj/train.py", line 88, in <module>' in report
    assert 'File ".../loader.py", line 12, in collate' in report
    assert "SITE-PACKAGES:\\torch\\nn\\modules\\module.py" in report
    assert "found at least two devices, cuda:0 and cpu!" in report


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("    tokens = tokenizer(text, return_tensors='pt')", "tokens = tokenizer(text, return_tensors='pt')"),
        ("    out = x@W.t() / scale", "out = x@W.t() / scale"),
        ("see https://github.com/pytorch/pytorch/issues/4534", "https://github.com/pytorch/pytorch/issues/4534"),
        ("expected cuda:0 and cpu/meta tensors", "expected cuda:0 and cpu/meta tensors"),
    ],
)
def test_code_urls_and_messages_without_secrets_are_left_as_written(text, kept):
    assert kept in redact(text, home="/home/alice", package_dirs=(), names=())


@pytest.mark.parametrize(
    "prompt", ["alice@gpu-node-17:~/proj$ ls", "(venv) [alice@gpu-node-17 proj]$ ls", "root@c0ffee12:/workspace# ls"]
)
def test_a_shell_prompt_loses_its_user_and_host(prompt):
    out = redact(prompt, home="/nonexistent", package_dirs=(), names=())
    assert "USER@HOST" in out and "alice" not in out and "gpu-node" not in out and "c0ffee" not in out
    assert out.endswith(" ls")


def test_this_machines_user_and_host_names_go_wherever_they_appear():
    out = redact("checkpoint saved by carol on dgx-station-2", home="/nonexistent", names=("carol", "dgx-station-2"))
    assert "carol" not in out and "dgx-station-2" not in out


# Every kind of secret a traceback itself can carry: in its paths, its code lines, the messages of the
# chain (c10d and NCCL name hosts and addresses, a loader names a signed URL, a config echoes a token).
# Made up, in the shapes their services issue; each must be gone from every report fixer makes.
PLANTED = {
    "linux home user": "alice.smith",
    "macos home user": "bobby-mac",
    "windows home user": "Carol Jones",
    "shared mount": "team-secret-vision",
    "e-mail": "dave.lee@example-lab.org",
    "fqdn host": "gpu-node-17.corp.example.com",
    "short host": "gpu-node-17",
    "host in MASTER_ADDR": "trainer-head-3",
    "internal service host": "mlflow.internal",
    "slurm node list": "dgxa-[01-04]",
    "nccl host prefix": "worker-b-9",
    "private ipv4": "10.0.3.17",
    "private ipv4 with port": "192.168.40.2",
    "public ipv4 with port": "34.120.5.6",
    "ipv6 link-local": "fe80::1ff:fe23:4567:890a",
    "ipv6 global": "2001:db8::8a2e:370:7334",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJ1c2VyIjoiYWxpY2UifQ.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
    "hugging face token": "hf_QwErTyUiOpAsDfGhJkLzXcVbNm123456",
    "github token": "ghp_0123456789abcdefABCDEF0123456789abcd",
    "openai key": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "aws access key id": "AKIAIOSFODNN7EXAMPLE",
    "aws secret key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "wandb key": "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567",
    "url password": "hunter2hunter2",
    "url signature": "9f86d081884c7d659a2feaa0c55ad015",
    "bearer token": "tok3nAbCdEfGh1234567890",
    "private key": "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB",
}
P = PLANTED
PLANTED_TRACEBACK = f"""\
Traceback (most recent call last):
  File "/home/{P["linux home user"]}/proj/train.py", line 41, in <module>
    os.environ["WANDB_API_KEY"] = "{P["wandb key"]}"; init(f"https://x:{P["url password"]}@{P["fqdn host"]}/db")
  File "/Users/{P["macos home user"]}/proj/env.py", line 9, in init
    headers = {{"Authorization": "Bearer {P["bearer token"]}"}}; aws(key="{P["aws secret key"]}")
  File "C:\\Users\\{P["windows home user"]}\\proj\\dist.py", line 12, in setup
    dist.init_process_group("nccl", init_method="tcp://{P["private ipv4"]}:29500")
  File "/mnt/{P["shared mount"]}/lib/rendezvous.py", line 7, in connect
    raise RuntimeError(msg)
RuntimeError: {P["nccl host prefix"]}:81234:81234 [0] NCCL INFO Bootstrap : Using eth0:{P["private ipv4"]}<0> \
connect to [{P["fqdn host"]}]:29500 failed; MASTER_ADDR={P["host in MASTER_ADDR"]} \
SLURM_NODELIST={P["slurm node list"]} peers {P["private ipv4 with port"]}:29400 {P["public ipv4 with port"]}:443 \
[{P["ipv6 link-local"]}]:29500 {P["ipv6 global"]} mlflow http://{P["internal service host"]}:5000/run \
by {P["e-mail"]} on {P["short host"]} session={P["jwt"]} HF_TOKEN={P["hugging face token"]} \
{P["github token"]} {P["openai key"]} {P["aws access key id"]} \
https://b.s3.amazonaws.com/c.pt?X-Amz-Signature={P["url signature"]} \
-----BEGIN OPENSSH PRIVATE KEY-----{P["private key"]}-----END OPENSSH PRIVATE KEY-----

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/home/{P["linux home user"]}/proj/train.py", line 50, in <module>
    loss = model(x)
RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
"""


@pytest.mark.parametrize(
    ("command", "shows_traceback"),
    [
        (["explain", "--markdown", "--redact"], True),
        (["explain", "--json", "--redact"], True),
        (["diagnose", "--markdown", "--redact", "--traceback"], True),
        (["diagnose", "--json", "--redact", "--traceback"], False),
    ],
    ids=["explain-markdown", "explain-json", "diagnose-markdown", "diagnose-json"],
)
def test_no_planted_secret_survives_a_redacted_report(tmp_path, command, shows_traceback):
    import getpass
    import socket

    from fixer.output.redact import _TOO_COMMON

    this_machine = [n for n in (getpass.getuser(), socket.gethostname()) if len(n) >= 3 and n not in _TOO_COMMON]
    paste = tmp_path / "paste.txt"
    paste.write_text(PLANTED_TRACEBACK + "".join(f"ValueError: run by {name}\n" for name in this_machine))
    done = subprocess.run(
        [sys.executable, "-m", "fixer", *command, str(paste)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    report = done.stdout.lower()
    assert [kind for kind, secret in PLANTED.items() if secret.lower() in report] == []
    assert [name for name in this_machine if name.lower() in report] == []
    assert "inputs-not-moved" in report
    if shows_traceback:
        assert "found at least two devices, cuda:0 and cpu!" in report
        assert "home:/proj/train.py" in report
