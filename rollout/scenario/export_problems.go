package scenario

import (
	"errors"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The helpers below let sibling formats (skill libraries) report problems
// the way scenario files do: file plus JSON path, or line and column.

// SyntaxProblem locates a JSON syntax or type error in data by line and column.
func SyntaxProblem(name string, data []byte, err error) Problem {
	return syntaxProblem(name, data, err)
}

// SchemaProblems turns a JSON Schema validation error on doc into problems
// with paths in the style tools[2].name; any other error becomes one problem.
func SchemaProblems(name string, doc any, err error) Problems {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return Problems{{File: name, Msg: err.Error()}}
	}
	return formatProblems(name, doc, ve)
}

// SortProblems orders problems by file, line and JSON path.
func SortProblems(ps Problems) { sortProblems(ps) }
