"""docs/gen_cookbook.py finds every recipe: a file examples/parallel/README.md
lists without a `# cookbook:` header (as other recipes may come), and one
with a header; a recipe with no cookbook-call line is run as it stands and
gets a row of the table at its own sizes; a tagged recipe README.md does
not list is an error.  Run on a copy of examples/parallel/ with two such
files added."""
# timeout: 120
import importlib.util
import os
import shutil
import sys
import tempfile

spec = importlib.util.spec_from_file_location("gen", "docs/gen_cookbook.py")
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)

root = tempfile.mkdtemp(prefix="cookbook_root_")
try:
    par = os.path.join(root, gen.PARALLEL)
    shutil.copytree(os.path.join(gen.ROOT, gen.PARALLEL), par)
    # an untagged recipe that README.md lists, with a mesh of its own
    with open(os.path.join(par, "extra_psum.shm"), "w") as f:
        f.write('mesh m = {i: 2}\n@shard_map[mesh=m, in_specs=P(i), out_specs=P()]\n'
                'def f(x) {\n  y = psum[axes=i] x\n  return y\n}\nx = [1.0, 2.0, 3.0, 4.0]\n'
                'y = f x\nprint y\n')
    with open(os.path.join(par, "README.md"), "a") as f:
        f.write("| 9 | `extra_psum.shm` | an extra: one psum | none |\n")
    gen.ROOT = root
    rs = gen.recipes()
    names = [r["name"] for r in rs]
    problems = []
    for want in ("dp", "pp_gpipe", "extra_psum"):
        if want not in names:
            problems.append("recipe %s not found (found %s)" % (want, names))
    extra = [r for r in rs if r["name"] == "extra_psum"]
    if extra and (extra[0]["recipe"] != 9 or extra[0]["title"] != "an extra" or extra[0]["call"]):
        problems.append("extra_psum read as %r" % {k: extra[0][k] for k in ("recipe", "title", "call")})
    if names != [r["name"] for r in sorted(rs, key=lambda r: (r["recipe"], r["order"], r["name"]))]:
        problems.append("recipes out of order: %s" % names)
    shutil.copy(os.path.join(par, "dp.shm"), os.path.join(par, "tagged_unlisted.shm"))
    try:
        gen.check_readme(gen.recipes())
        problems.append("a tagged recipe README.md does not list was accepted")
    except SystemExit as e:
        if "tagged_unlisted" not in str(e):
            problems.append("wrong complaint: %s" % e)
    os.remove(os.path.join(par, "tagged_unlisted.shm"))
    runner = gen.Runner(os.environ["SHMAPI"])
    try:
        table = gen.own_size_table(runner, gen.recipes())
    finally:
        runner.close()
    row = [l for l in table.splitlines() if l.startswith("| an extra |")]
    if not row or "{i: 2}`" not in row[0] or row[0].count(" us") < 4:
        problems.append("no row at its own sizes for extra_psum:\n" + table)
finally:
    shutil.rmtree(root, ignore_errors=True)
for p in problems:
    print(p)
print("%d problems" % len(problems))
sys.exit(1 if problems else 0)
