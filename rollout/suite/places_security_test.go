package suite_test

// Places of the security domain's scenarios that the settings table of
// shape_test.go lacks.
func init() {
	for k, v := range map[string]string{
		"Manchester": "UK", "Bristol": "UK", "Austin": "US", "Texas": "US",
		"Vienna": "EU", "Frankfurt": "EU", "Sacramento": "US", "California": "US",
	} {
		settings[k] = v
	}
}
