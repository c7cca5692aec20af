#!/bin/sh
# Prints a greeting. Usage: sh greet.sh [NAME]
name="${1:-world}"
echo "Hello, $name!"
