# Benchmark 9: how the code of two cubins compares kernel by kernel. python3 sasssame.py A B
# prints "K of N kernels with equal SASS" (cuobjdump -sass, each instruction's text without its
# address and encoding; branch targets are offsets within the kernel, so the same code placed
# elsewhere compares equal), or "no cuobjdump". Exit status 0.
import re
import shutil
import subprocess
import sys


def kernels(path):
    out = subprocess.run(['cuobjdump', '-sass', path], capture_output=True, text=True,
                         check=True).stdout
    ks, cur = {}, None
    for line in out.splitlines():
        m = re.match(r'\s+Function : (\S+)', line)
        if m:
            cur = m.group(1)
            ks[cur] = []
            continue
        m = re.match(r'\s+/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;', line)
        if cur is not None and m:
            ks[cur].append(m.group(1))
    return ks


if not shutil.which('cuobjdump'):
    print('no cuobjdump')
    sys.exit(0)
a, b = kernels(sys.argv[1]), kernels(sys.argv[2])
same = sum(1 for k in a if k in b and a[k] == b[k])
extra = '' if set(a) == set(b) else f' (kernel sets differ: {len(a)} against {len(b)})'
print(f'{same} of {len(b)} kernels with equal SASS{extra}')
