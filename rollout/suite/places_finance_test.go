package suite_test

// Places the finance scenarios are set in that the shared settings table
// lacks.
func init() {
	for k, v := range map[string]string{"Manchester": "UK", "Denver": "US", "Colorado": "US", "Bristol": "UK"} {
		settings[k] = v
	}
}
