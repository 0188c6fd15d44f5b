package main

import (
	"github.com/antidrift/antidrift/export"
	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/spf13/pflag"
)

// tableFlags are the output flags of every command that writes tables
// (pairs, rewards, export). One split seed default across them keeps a
// scenario in the same split in every table.
type tableFlags struct {
	out, formats, split string
	seed                int64
	partial             partialFlag
}

func (t *tableFlags) add(fl *pflag.FlagSet, seedHelp string) {
	fl.StringVar(&t.out, "out", "", "output folder")
	fl.StringVar(&t.formats, "format", "parquet,arrow,jsonl", "file formats, comma-separated: parquet, arrow, jsonl")
	fl.StringVar(&t.split, "split", "0.8,0.1,0.1", "train,validation,test shares of scenarios (the same for every table)")
	fl.Int64Var(&t.seed, "seed", 1, seedHelp)
	t.partial.add(fl)
}

// parse checks the formats and split shares.
func (t tableFlags) parse() ([]string, dataset.Ratios, error) {
	formats, err := export.ParseFormats(t.formats)
	if err != nil {
		return nil, dataset.Ratios{}, err
	}
	ratios, err := dataset.ParseRatios(t.split)
	if err != nil {
		return nil, dataset.Ratios{}, err
	}
	return formats, ratios, nil
}
