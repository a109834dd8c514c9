#!/bin/sh
# greet.sh [NAME] — prints a greeting (default NAME: world).
printf 'Hello, %s!\n' "${1:-world}"
