package main

// Version is the toolkit version recorded in every run and export.
const Version = "0.1.0"
