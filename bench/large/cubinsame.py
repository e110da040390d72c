# Benchmark 9: how two cubins of one link differ. python3 cubinsame.py A.cubin B.cubin prints
# "identical", or how many bytes differ, how many sections differ in content (a section's bytes
# compared wherever it lies), and whether any of them is code (.text*): none when the same code
# was laid out in another order (sections, symbols and what refers to them by index), or when
# only ptxas's note of its command line (.note.nv.tkinfo) differs. Exit status 0 identical, 1
# otherwise.
import struct
import sys


def sections(path):
    b = open(path, 'rb').read()
    if b[:4] != b'\x7fELF' or b[4] != 2:
        sys.exit(f'{path}: not a 64-bit ELF file')
    shoff, = struct.unpack_from('<Q', b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', b, 0x3a)
    hdrs = [struct.unpack_from('<IIQQQQIIQQ', b, shoff + i * shentsize) for i in range(shnum)]
    names = hdrs[shstrndx][4]
    out = {}
    for h in hdrs:
        name = b[names + h[0]:b.index(b'\0', names + h[0])].decode()
        data = b'' if h[1] == 8 else b[h[4]:h[4] + h[5]]  # SHT_NOBITS holds no bytes
        out.setdefault(name, []).append(data)
    return b, out


a, sa = sections(sys.argv[1])
c, sc = sections(sys.argv[2])
if a == c:
    print('identical')
    sys.exit(0)
differ = sum(x != y for x, y in zip(a, c)) + abs(len(a) - len(c))
changed = sorted(k for k in set(sa) | set(sc) if sorted(sa.get(k, [])) != sorted(sc.get(k, [])))
code = [k for k in changed if k.startswith('.text')]
shown = ', '.join((code or changed)[:4]) + ('...' if len(code or changed) > 4 else '')
print(f'{differ} of {len(a)} bytes differ; {len(changed)} of {len(sa)} section names differ in '
      f'content, {len(code)} of them code (.text*): {shown}' +
      ('' if code else '; every code section the same'))
sys.exit(1)
