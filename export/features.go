package export

// Feature is one column as Hugging Face datasets types it, in the form of
// the YAML `dataset_info.features` list (Features._to_yaml_list): a scalar
// `dtype`, or `list` with its element's dtype. Message columns are
// List(Json()) ("list: json"): the Parquet files store them as lists of
// JSON with the Arrow type list<extension<arrow.json>>, which datasets
// reads as Json.
type Feature struct {
	Name  string `json:"name"`
	Dtype string `json:"dtype,omitempty"`
	List  string `json:"list,omitempty"`
}

func featuresOf[R any](cols []column[R]) []Feature {
	out := make([]Feature, len(cols))
	for i, c := range cols {
		f := Feature{Name: c.name}
		switch c.kind {
		case kString, kDictString:
			f.Dtype = "string"
		case kBool:
			f.Dtype = "bool"
		case kInt64:
			f.Dtype = "int64"
		case kFloat64, kOptFloat64:
			f.Dtype = "float64"
		case kMessages:
			f.List = "json"
		case kStrings:
			f.List = "string"
		case kInt64s:
			f.List = "int64"
		case kFloat64s:
			f.List = "float64"
		}
		out[i] = f
	}
	return out
}
