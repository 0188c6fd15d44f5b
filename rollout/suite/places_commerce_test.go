package suite_test

// Places of the commerce scenarios that the shared settings table lacks.
func init() {
	for k, v := range map[string]string{"Bristol": "UK", "California": "US"} {
		settings[k] = v
	}
}
