"""The zygote lets its forks copy the mappings of its code (forge.confine.text_pages):
which mappings it picks, that their contents and protections stay as they were,
and that a child forked afterwards faults fewer pages in to run the same code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from forge.confine.text_pages import candidates

ROOT = Path(__file__).resolve().parents[2]

SMAPS = """\
55d0c0000000-55d0c0001000 r--p 00000000 fe:00 1001                       /usr/bin/python3.11
Rss:                   4 kB
Anonymous:             0 kB
55d0c0001000-55d0c0002000 r-xp 00001000 fe:00 1001                       /usr/bin/python3.11
Rss:                   0 kB
Anonymous:             0 kB
7f0000000000-7f0000200000 r-xp 00010000 fe:00 2002                /usr/lib/libpython3.11.so.1.0
Size:               2048 kB
Rss:                1964 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me sd
7f0000200000-7f0000210000 r--p 00210000 fe:00 2002                /usr/lib/libpython3.11.so.1.0
Rss:                  64 kB
Anonymous:            12 kB
7f0000210000-7f0000220000 rw-p 00220000 fe:00 2002                /usr/lib/libpython3.11.so.1.0
Rss:                  64 kB
Anonymous:            64 kB
7f0000300000-7f0000400000 rw-p 00000000 00:00 0
Rss:                 900 kB
Anonymous:           900 kB
7f0000400000-7f0000401000 r--s 00000000 fe:00 3003                       /dev/shm/shared
Rss:                   4 kB
Anonymous:             0 kB
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]
Rss:                   8 kB
Anonymous:             0 kB
"""


def test_only_read_only_private_file_mappings_with_pages_and_none_anonymous() -> None:
    # the first ELF page and libpython's code; not: a mapping with no page present,
    # one that has an anonymous page already, a writable one, anonymous memory, a
    # shared mapping, the vdso
    assert candidates(SMAPS) == [0x55D0C0000000, 0x7F0000000000]


# Forks two children that run the same code (a JSON round trip and a regex: code
# the parent ran once before), one before `share_file_pages` and one after, and
# prints each one's minor faults, then whether the mappings kept their contents
# and protections and how many mappings were done.
_PROGRAM = """
import json, os, re, resource, sys
from forge.confine.text_pages import candidates, share_file_pages

def work():
    doc = json.loads(json.dumps({"a": [1, 2.5, "x"], "b": {"c": None}}))
    return re.findall(r"[a-z]+", repr(doc))

def child_faults():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        work()
        after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        os.write(w, str(after - before).encode())
        os._exit(0)
    os.close(w)
    faults = int(os.read(r, 100))
    os.waitpid(pid, 0)
    return faults

def mappings():
    lines = open("/proc/self/maps").read().splitlines()
    return {line.split()[0]: line.split()[1] for line in lines if len(line.split()) >= 6}

work()
starts = candidates(open("/proc/self/smaps").read())
mem = os.open("/proc/self/mem", os.O_RDONLY)
first = [os.pread(mem, 64, s) for s in starts]
maps = mappings()
unshared = child_faults()
done = share_file_pages()
shared = child_faults()
same = [os.pread(mem, 64, s) for s in starts] == first and mappings() == maps
print(unshared, shared, done, len(starts), same)
"""


def test_children_of_a_shared_process_fault_less_and_nothing_changes() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + _PROGRAM,
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
        env={},
    ).stdout.split()
    unshared, shared, done, found, same = int(out[0]), int(out[1]), int(out[2]), int(out[3]), out[4]
    assert found > 0 and done == found  # every mapping it picked got its page
    assert same == "True"  # the same bytes, the same protections
    assert shared <= unshared - 8  # the child found the code mapped (about 25 fewer here)
