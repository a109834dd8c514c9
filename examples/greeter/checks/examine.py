"""The greeter's private-evaluator examiner: the same cases as test.sh, judged by the examiner itself.

A private-evaluator-v1 check runs this file (staged from PRIME, like every verifier) as the examiner:
    command: ["/usr/bin/python3", "-I", "/run/worldline-verifiers/demo-repo/checks/examine.py"]
It reads the candidate's tree (its working directory) as data, runs the candidate's program through the
examiner broker as the candidate principal, compares what it printed with what this file expects, and
writes a JUnit report to /run/worldline-report/report. The candidate cannot reach that report, this
file or the broker. Only what this file concludes is the verdict: it never copies candidate output
into the report as a result.
"""
import os
import sys
from xml.sax.saxutils import escape, quoteattr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from worldline_broker import Broker  # noqa: E402  (next to this file among the verifiers)

CASES = [
    ("greets the world by default", [], "Hello, world!"),
    ("greets by name", ["Ada"], "Hello, Ada!"),
    ("--shout greets in capitals", ["--shout", "Ada"], "HELLO, ADA!"),
]


def main():
    tree = os.getcwd()
    results = []
    with Broker() as broker:
        for name, args, want in CASES:
            exit, out, truncated = broker.run(["/bin/sh", "src/greet.sh"] + args, tree, 10000)
            got = out.decode("utf-8", "replace").rstrip("\n")
            ok = exit["code"] == 0 and not truncated and got == want
            results.append((name, ok, "want %r, got %r (exit %s)" % (want, got[:200], exit)))
    # Read as data: the candidate's VERSION must be a number.
    try:
        with open(os.path.join(tree, "VERSION"), encoding="utf-8") as f:
            version = f.read().strip()
    except OSError as e:
        version = "(unreadable: %s)" % e.strerror
    results.append(("VERSION is a number", version.isdigit(), "got %r" % version[:40]))
    failures = sum(1 for _, ok, _ in results if not ok)
    cases = "".join(
        "<testcase name=%s>%s</testcase>" % (quoteattr(n), "" if ok else "<failure message=%s/>" % quoteattr(why))
        for n, ok, why in results
    )
    with open("/run/worldline-report/report", "w", encoding="utf-8") as f:
        f.write('<testsuite name="greeter" tests="%d" failures="%d">%s</testsuite>\n' % (len(results), failures, cases))
    print("%d cases, %d failed" % (len(results), failures))
    for n, ok, why in results:
        print(("ok   " if ok else "FAIL ") + escape(n) + ("" if ok else ": " + why))


if __name__ == "__main__":
    main()
