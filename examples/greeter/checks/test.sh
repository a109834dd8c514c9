#!/bin/sh
# The project's tests. The demo Policy's check "verify" runs them in each candidate's tree. This file
# is a verifier: the check runs PRIME's copy of it, never the candidate's. Exit 0 = PASS.
failed=0
expect() { # expect DESCRIPTION WANT [ARG...]: `sh src/greet.sh ARG...` must print WANT
  desc=$1 want=$2
  shift 2
  got=$(sh src/greet.sh "$@" 2>&1) || got="$got (exit $?)"
  if [ "$got" = "$want" ]; then
    echo "ok   $desc"
  else
    echo "FAIL $desc: want '$want', got '$got'"
    failed=1
  fi
}
expect 'greets the world by default' 'Hello, world!'
expect 'greets by name' 'Hello, Ada!' Ada
expect '--shout greets in capitals' 'HELLO, ADA!' --shout Ada
case $(cat VERSION) in
  '' | *[!0-9]*) echo "FAIL VERSION is a number: got '$(cat VERSION)'"; failed=1 ;;
  *) echo "ok   VERSION is a number" ;;
esac
exit "$failed"
