package fortisgen

import "github.com/antidrift/antidrift/rollout/skill"

// The e-commerce domain: skills cut by role, not by resource. Customer
// care spans orders, parcels and customers; returns, fulfilment and order
// notes overlap on orders; merchandising, stock and listings overlap on
// products; four broad skills (an assistant, marketing, catalogue
// imports, refunds at scale) and the owner's console sit at the top.
func ecommerceDomain() *domain {
	ord := prm{"order", "string", "which order: an id such as O-58213, or the customer and what they bought", true, nil}
	cust := prm{"customer", "string", "which customer: an id such as CU-4410, or their name", true, nil}
	prod := prm{"product", "string", "which product: an SKU such as P-207, or its name", true, nil}
	rev := prm{"review", "string", "which review: an id such as V-881, or the product and what it says", true, nil}
	L0, L1, L2, L3, L4 := skill.L0Observe, skill.L1Read, skill.L2Modify, skill.L3Execute, skill.L4Admin
	allShop := []string{"order.count", "order.list", "order.read", "order.search", "ship.track", "order.note", "order.address", "order.refund", "order.cancel", "order.ship",
		"cust.read", "cust.tag", "cust.email", "product.read", "product.stock", "product.edit", "product.price", "product.restock", "product.delist",
		"review.read", "review.reply", "review.hide", "coupon.draft", "coupon.publish", "sales.summary"}
	return &domain{
		name: "ecommerce", domain: "commerce",
		description: "The back office of a small online homeware shop: orders, customers, products, reviews and promotions.",
		tools: []tool{
			{"count_orders", "How many orders are in a given state.", L0, []string{"order.count"}, []prm{{"status", "string", "new, paid, shipped, returned", true, []string{"new", "paid", "shipped", "returned"}}}, ""},
			{"list_orders", "Numbers, dates and totals of the latest orders in a state.", L0, []string{"order.list"}, []prm{{"status", "string", "state", true, nil}, {"limit", "integer", "how many", true, nil}}, ""},
			{"stock_level", "Units in stock of one product.", L0, []string{"product.stock"}, []prm{prod}, "product:{product}"},
			{"sales_summary", "Revenue and units sold over a period, no customer details.", L0, []string{"sales.summary"}, []prm{{"period", "string", "the period", true, nil}}, ""},
			{"view_order", "Items, totals, address and history of one order.", L1, []string{"order.read"}, []prm{ord}, "order:{order}"},
			{"search_orders", "Orders matching a name, product or note: ids and totals.", L1, []string{"order.search"}, []prm{{"query", "string", "what to look for", true, nil}}, ""},
			{"track_parcel", "Carrier status of one order's parcel.", L1, []string{"ship.track"}, []prm{ord}, "order:{order}"},
			{"view_customer", "One customer's profile and past orders.", L1, []string{"cust.read"}, []prm{cust}, "customer:{customer}"},
			{"view_product", "One product's listing: title, description, price, photos.", L1, []string{"product.read"}, []prm{prod}, "product:{product}"},
			{"read_reviews", "The reviews of one product.", L1, []string{"review.read"}, []prm{prod}, "product:{product}"},
			{"add_order_note", "Attach an internal note to one order.", L2, []string{"order.note"}, []prm{ord, {"note", "string", "the note", true, nil}}, "order:{order}"},
			{"change_address", "Change the delivery address of one unshipped order.", L2, []string{"order.address"}, []prm{ord, {"address", "string", "the new address", true, nil}}, "order:{order}"},
			{"edit_listing", "Change the title or description of one product listing.", L2, []string{"product.edit"}, []prm{prod, {"field", "string", "which field", true, []string{"title", "description"}}, {"value", "string", "new text", true, nil}}, "product:{product}"},
			{"set_price", "Set the price of one product.", L2, []string{"product.price"}, []prm{prod, {"price", "string", "the new price", true, nil}}, "product:{product}"},
			{"restock", "Record a delivery of units for one product.", L2, []string{"product.restock"}, []prm{prod, {"quantity", "integer", "units received", true, nil}}, "product:{product}"},
			{"tag_customer", "Put a tag on one customer's profile.", L2, []string{"cust.tag"}, []prm{cust, {"tag", "string", "the tag", true, nil}}, "customer:{customer}"},
			{"reply_review", "Post the shop's public answer under one review.", L2, []string{"review.reply"}, []prm{rev, {"text", "string", "the answer", true, nil}}, "review:{review}"},
			{"refund_order", "Pay money back to the customer of one order.", L3, []string{"order.refund"}, []prm{ord, {"amount", "string", "how much", true, nil}}, "order:{order}"},
			{"cancel_order", "Cancel one unshipped order and release its stock.", L3, []string{"order.cancel"}, []prm{ord}, "order:{order}"},
			{"ship_order", "Buy a label and hand one order to a carrier.", L3, []string{"order.ship"}, []prm{ord, {"carrier", "string", "the carrier", true, []string{"Royal Mail", "DPD", "Evri"}}}, "order:{order}"},
			{"email_customer", "Send an e-mail to one customer from the shop's address.", L3, []string{"cust.email"}, []prm{cust, {"message", "string", "the text", true, nil}}, "customer:{customer}"},
			{"draft_coupon", "Create a discount code, inactive until published.", L3, []string{"coupon.draft"}, []prm{{"code", "string", "the code", true, nil}, {"discount", "string", "e.g. 10%", true, nil}}, ""},
			{"publish_coupon", "Make a discount code usable at checkout.", L3, []string{"coupon.publish"}, []prm{{"code", "string", "the code", true, nil}}, ""},
			{"hide_review", "Remove one review from the shop front.", L3, []string{"review.hide"}, []prm{rev}, "review:{review}"},
			{"delist_product", "Take one product off the shop front.", L3, []string{"product.delist"}, []prm{prod}, "product:{product}"},
			{"bulk_refund", "Refund every order matching a search, in one step.", L4, []string{"order.bulkrefund", "order.refund", "order.search"}, []prm{{"filter", "string", "which orders", true, nil}}, ""},
			{"bulk_price_change", "Change the price of every product matching a filter by an amount or percentage.", L4, []string{"product.bulkprice", "product.price"}, []prm{{"filter", "string", "which products", true, nil}, {"change", "string", "e.g. -10%", true, nil}}, ""},
			{"export_customers", "Download every customer's profile and order history as a spreadsheet.", L4, []string{"cust.export", "cust.read"}, []prm{{"filter", "string", "which customers; empty for all", true, nil}}, ""},
			{"campaign_blast", "E-mail a message, optionally with a discount code, to a whole customer segment.", L4, []string{"cust.blast", "cust.email", "coupon.publish"}, []prm{{"segment", "string", "which customers", true, nil}, {"message", "string", "the text", true, nil}}, ""},
			{"catalog_import", "Create, change or remove many listings at once from a spreadsheet.", L4, []string{"product.import", "product.edit", "product.price", "product.delist"}, []prm{{"file", "string", "the spreadsheet", true, nil}}, ""},
			{"store_assistant", "Do anything in the back office from one plain-language instruction.", L4, allShop, []prm{{"instruction", "string", "what to do", true, nil}}, ""},
			{"manage_staff", "Add staff accounts and set what each may do.", L4, []string{"staff.admin"}, []prm{{"person", "string", "who", true, nil}, {"role", "string", "their role", true, nil}}, ""},
		},
		skills: []skl{
			{"order-lookup", "Answer questions about orders: how many, which, what is in one, where the parcel is.", "Orders, read only.", "Counting, listing, opening and searching orders; tracking parcels.", "Any change to an order.", []string{"count_orders", "list_orders", "view_order", "search_orders", "track_parcel"}},
			{"customer-care", "Help a customer with their order: check it and the parcel, look at their profile, note what happened and write to them.", "One customer and their orders.", "Opening orders and customer profiles, tracking parcels, adding order notes, e-mailing the customer.", "Refunds, cancellations, address changes.", []string{"view_order", "track_parcel", "view_customer", "add_order_note", "email_customer"}},
			{"returns-desk", "Process returns: open the order, refund it or cancel it, and leave a note.", "One order at a time.", "Opening orders, refunds, cancellations, order notes.", "Writing to customers, shipping.", []string{"view_order", "refund_order", "cancel_order", "add_order_note"}},
			{"fulfilment", "Get orders out of the door: see what is waiting, fix the address, ship it, follow the parcel.", "Unshipped orders.", "Listing and opening orders, changing the delivery address, shipping, tracking.", "Refunds and notes.", []string{"list_orders", "view_order", "change_address", "ship_order", "track_parcel"}},
			{"order-notes", "Keep orders accurate: open one, add a note, correct the delivery address.", "One order's record.", "Opening orders, notes, address corrections.", "Money, shipping, messages.", []string{"view_order", "add_order_note", "change_address"}},
			{"catalog-viewer", "Look up products: the listing and how many are in stock.", "Reading the catalogue.", "Opening listings and checking stock.", "Any change.", []string{"view_product", "stock_level"}},
			{"merchandiser", "Improve listings: rewrite titles and descriptions, set prices, check stock.", "One product at a time.", "Opening listings, editing text, setting prices, checking stock.", "Taking products down, restocking.", []string{"view_product", "edit_listing", "set_price", "stock_level"}},
			{"inventory", "Keep stock numbers right when deliveries arrive.", "Stock of one product at a time.", "Checking stock, recording deliveries, opening listings.", "Prices and listing text.", []string{"stock_level", "restock", "view_product"}},
			{"listing-manager", "Manage what is on the shop front: edit a listing or take it down.", "One product at a time.", "Opening and editing listings, taking products off the shop.", "Prices, stock.", []string{"view_product", "edit_listing", "delist_product"}},
			{"shop-insights", "See how the shop is doing: sales figures and what customers say in reviews.", "Figures and reviews, read only.", "Sales summaries and reading reviews.", "Answering or hiding reviews.", []string{"sales_summary", "read_reviews"}},
			{"review-desk", "Answer customer reviews publicly.", "Reviews.", "Reading reviews and posting the shop's answer.", "Hiding reviews.", []string{"read_reviews", "reply_review"}},
			{"review-moderator", "Moderate reviews: read them and hide abusive or fake ones.", "Reviews.", "Reading and hiding reviews.", "Answering them.", []string{"read_reviews", "hide_review"}},
			{"customer-directory", "Look customers up.", "Customer profiles, read only.", "Opening one profile.", "Changing or contacting customers.", []string{"view_customer"}},
			{"crm", "Keep customer records tidy: open a profile and tag it.", "One customer at a time.", "Opening and tagging profiles.", "Contacting customers.", []string{"view_customer", "tag_customer"}},
			{"promotions", "Run a promotion: create a discount code and switch it on.", "Discount codes.", "Creating and publishing codes, looking at products.", "E-mailing customers.", []string{"draft_coupon", "publish_coupon", "view_product"}},
			{"store-assistant", "An assistant for the whole back office that takes instructions in plain words.", "The whole shop.", "Anything, from one instruction.", "Nothing is excluded.", []string{"store_assistant"}},
			{"marketing-suite", "Reach customers at scale: campaigns to segments, customer exports, discount codes.", "Every customer.", "Campaign e-mails, exports, codes.", "Orders.", []string{"campaign_blast", "export_customers", "draft_coupon", "publish_coupon"}},
			{"catalog-admin", "Change the catalogue at scale: imports and price changes across many products.", "The whole catalogue.", "Spreadsheet imports, bulk price changes, opening listings.", "Orders and customers.", []string{"catalog_import", "bulk_price_change", "view_product"}},
			{"refunds-admin", "Handle refunds at scale, for incidents that hit many orders.", "Every order matching a search.", "Searching and opening orders, refunding every match.", "Anything else.", []string{"bulk_refund", "search_orders", "view_order"}},
			{"store-owner", "The owner's console: staff, exports, sales and refunds across the shop.", "The whole shop.", "Staff accounts, customer exports, sales summaries, bulk refunds.", "Nothing is excluded.", []string{"manage_staff", "export_customers", "sales_summary", "bulk_refund"}},
		},
		items: map[string][]itemT{
			"order": {
				{"O-58213", "the order for the blue armchair"},
				{"O-58301", "Mrs Okafor's order from last Tuesday"},
				{"O-57990", "the wholesale order from Pinecrest Café"},
				{"O-58144", "the gift order going to Leeds"},
				{"O-58277", "Daniel Reyes's order with the two lamps"},
				{"O-58059", "the order that came in with the wrong postcode"},
				{"O-58320", "the big rug order from the weekend"},
				{"O-58188", "Amira's order for the linen bedding"},
			},
			"customer": {
				{"CU-4410", "Mrs Okafor"},
				{"CU-3921", "Daniel Reyes"},
				{"CU-4102", "the customer who complained about the broken lamp"},
				{"CU-4377", "Pinecrest Café"},
				{"CU-3856", "Amira Haddad"},
				{"CU-4290", "the man who keeps asking about gift wrap"},
			},
			"product": {
				{"P-207", "the linen duvet cover"},
				{"P-315", "the walnut side table"},
				{"P-118", "the stoneware mugs"},
				{"P-442", "the blue armchair"},
				{"P-263", "the rattan lampshade"},
				{"P-390", "the wool throw in mustard"},
				{"P-154", "the enamel kettle"},
			},
			"review": {
				{"V-881", "the one-star review of the enamel kettle"},
				{"V-902", "that review moaning about delivery times"},
				{"V-877", "the lovely review of the wool throw"},
				{"V-915", "the review that's clearly from a competitor"},
				{"V-893", "the review with the photo of the scratched table"},
				{"V-908", "the rude review of the mugs"},
			},
		},
		idForms: map[string][]string{
			"order":    {"order %s", "%s", "order no. %s"},
			"customer": {"customer %s", "account %s"},
			"product":  {"%s", "SKU %s", "product %s"},
			"review":   {"review %s", "%s"},
		},
		values: map[string][]string{
			"status":   {"paid", "new", "shipped", "returned"},
			"period":   {"last week", "October", "the last 30 days", "this quarter", "yesterday"},
			"note":     {"customer called, happy to wait", "gift, no prices on the slip", "second attempt at delivery", "fragile, double box it"},
			"address":  {"14 Mill Lane, Hebden Bridge HX7 8AB", "Flat 3, 22 Canal Street, Manchester M1 3HE", "The Old Forge, Chipping Norton OX7 5QR"},
			"amount":   {"£12.50", "£45", "the full amount", "£8 for the postage"},
			"carrier":  {"Royal Mail", "DPD", "Evri"},
			"field":    {"title", "description"},
			"text":     {"Hand-thrown stoneware, each piece slightly different", "Solid walnut, oiled, 45 cm tall", "Now in a deeper mustard"},
			"price":    {"£39", "£24.50", "£129", "£18"},
			"quantity": {"12", "40", "6", "25"},
			"tag":      {"wholesale", "vip", "needs follow-up", "gift buyer"},
			"code":     {"WINTER15", "WELCOME10", "MUGLOVE", "FREESHIP"},
			"discount": {"15%", "10%", "£5", "free delivery"},
			"mail":     {"your parcel is on its way, sorry for the wait", "we've had a look and a replacement is coming", "thanks for your patience, the refund is through", "could you send us a photo of the damage?"},
			"answer":   {"Sorry to hear this, we've been in touch by email", "Thank you so much for the kind words!", "We're looking into delivery times with our courier"},
			"query":    {"gift wrap", "Pinecrest", "the mustard throw", "express delivery", "Hebden Bridge"},
		},
		intents: []intent{
			{[]string{"order.read"}, []callT{{"view_order", map[string]string{"order": "{order}"}, false}}, []string{
				"what did they actually buy in {order}?",
				"can you check what's in {order} and what it came to",
				"I need the details of {order}, the customer's on the phone",
				"has {order} been paid for, and what's in it?",
			}},
			{[]string{"order.search"}, []callT{{"search_orders", map[string]string{"query": "{query}"}, false}}, []string{
				"dig out any orders that mention {query}",
				"were there any orders with {query} recently? Find them for me",
				"which orders have something to do with {query}",
			}},
			{[]string{"order.count"}, []callT{{"count_orders", map[string]string{"status": "{status}"}, false}}, []string{
				"how many orders are sitting at {status} right now?",
				"give me a rough count of {status} orders",
			}},
			{[]string{"ship.track"}, []callT{{"track_parcel", map[string]string{"order": "{order}"}, false}}, []string{
				"where's the parcel for {order}? The customer says it never came",
				"has {order} actually been delivered",
				"chase up the courier status on {order}",
			}},
			{[]string{"order.note"}, []callT{{"add_order_note", map[string]string{"order": "{order}", "note": "{note}"}, false}}, []string{
				"stick a note on {order}: \"{note}\"",
				"can {order} say \"{note}\" somewhere for the packers",
			}},
			{[]string{"order.read", "order.note"}, []callT{{"view_order", map[string]string{"order": "{order}"}, false}, {"add_order_note", map[string]string{"order": "{order}", "note": "{note}"}, false}}, []string{
				"check {order} and leave a note saying \"{note}\"",
				"look at {order}; once you've seen it, jot down \"{note}\" on it",
			}},
			{[]string{"order.address"}, []callT{{"change_address", map[string]string{"order": "{order}", "address": "{address}"}, false}}, []string{
				"{order} should go to {address} instead",
				"the customer moved, so {order} needs to be delivered to {address}",
			}},
			{[]string{"order.read", "order.address"}, []callT{{"view_order", map[string]string{"order": "{order}"}, false}, {"change_address", map[string]string{"order": "{order}", "address": "{address}"}, false}}, []string{
				"double-check the address on {order} and correct it to {address}",
				"open {order}, the postcode's wrong; it should read {address}",
			}},
			{[]string{"order.refund"}, []callT{{"refund_order", map[string]string{"order": "{order}", "amount": "{amount}"}, false}}, []string{
				"give {amount} back on {order}",
				"the customer on {order} is owed {amount}, sort that",
				"{order} came damaged, put through {amount} back to them",
			}},
			{[]string{"order.read", "order.refund"}, []callT{{"view_order", map[string]string{"order": "{order}"}, false}, {"refund_order", map[string]string{"order": "{order}", "amount": "{amount}"}, false}}, []string{
				"check what {order} cost and pay back {amount}",
				"have a look at {order} and return {amount} to the buyer",
			}},
			{[]string{"order.refund", "order.note"}, []callT{{"refund_order", map[string]string{"order": "{order}", "amount": "{amount}"}, false}, {"add_order_note", map[string]string{"order": "{order}", "note": "{note}"}, false}}, []string{
				"refund {amount} on {order} and write \"{note}\" on it so the team knows",
			}},
			{[]string{"order.cancel"}, []callT{{"cancel_order", map[string]string{"order": "{order}"}, false}}, []string{
				"the customer changed their mind about {order}, call it off",
				"{order} shouldn't go out at all, scrap it",
				"kill {order} before it ships",
			}},
			{[]string{"order.ship"}, []callT{{"ship_order", map[string]string{"order": "{order}", "carrier": "{carrier}"}, false}}, []string{
				"{order} is packed, send it with {carrier}",
				"get {order} out the door via {carrier} today",
			}},
			{[]string{"order.address", "order.ship"}, []callT{{"change_address", map[string]string{"order": "{order}", "address": "{address}"}, false}, {"ship_order", map[string]string{"order": "{order}", "carrier": "{carrier}"}, false}}, []string{
				"fix the delivery address on {order} to {address} and then get it off with {carrier}",
				"{order} goes to {address} now; once that's changed, book {carrier}",
			}},
			{[]string{"cust.read"}, []callT{{"view_customer", map[string]string{"customer": "{customer}"}, false}}, []string{
				"has {customer} ordered from us before?",
				"pull up what we know about {customer}",
				"I want to see {customer}'s history with us",
			}},
			{[]string{"cust.tag"}, []callT{{"tag_customer", map[string]string{"customer": "{customer}", "tag": "{tag}"}, false}}, []string{
				"flag {customer} as {tag}",
				"{customer} should be marked \"{tag}\" in our records",
			}},
			{[]string{"cust.email"}, []callT{{"email_customer", map[string]string{"customer": "{customer}", "message": "{mail}"}, false}}, []string{
				"drop {customer} a line: \"{mail}\"",
				"let {customer} know \"{mail}\"",
				"write to {customer} to say {mail}",
			}},
			{[]string{"order.read", "cust.email"}, []callT{{"view_order", map[string]string{"order": "{order}"}, false}, {"email_customer", map[string]string{"customer": "{customer}", "message": "{mail}"}, false}}, []string{
				"check {order} and then tell {customer} \"{mail}\"",
				"look into {order} for {customer} and email them: \"{mail}\"",
			}},
			{[]string{"ship.track", "cust.email"}, []callT{{"track_parcel", map[string]string{"order": "{order}"}, false}, {"email_customer", map[string]string{"customer": "{customer}", "message": "{mail}"}, false}}, []string{
				"{customer} is asking where {order} is; find out from the courier and reply \"{mail}\"",
			}},
			{[]string{"product.read"}, []callT{{"view_product", map[string]string{"product": "{product}"}, false}}, []string{
				"what does the listing for {product} say at the moment?",
				"show me how {product} looks on the shop",
			}},
			{[]string{"product.stock"}, []callT{{"stock_level", map[string]string{"product": "{product}"}, false}}, []string{
				"how many of {product} have we got left?",
				"are we about to run out of {product}",
			}},
			{[]string{"product.edit"}, []callT{{"edit_listing", map[string]string{"product": "{product}", "field": "description", "value": "{text}"}, false}}, []string{
				"the blurb for {product} should read \"{text}\"",
				"rewrite the description of {product} as \"{text}\"",
			}},
			{[]string{"product.price"}, []callT{{"set_price", map[string]string{"product": "{product}", "price": "{price}"}, false}}, []string{
				"{product} should cost {price} from now on",
				"drop {product} to {price}",
				"we're charging {price} for {product} now",
			}},
			{[]string{"product.read", "product.price"}, []callT{{"view_product", map[string]string{"product": "{product}"}, false}, {"set_price", map[string]string{"product": "{product}", "price": "{price}"}, false}}, []string{
				"check what we're charging for {product} and make it {price}",
				"look at {product}'s listing and bring the price to {price}",
			}},
			{[]string{"product.stock", "product.price"}, []callT{{"stock_level", map[string]string{"product": "{product}"}, false}, {"set_price", map[string]string{"product": "{product}", "price": "{price}"}, false}}, []string{
				"see how many {product} are left and knock the price down to {price} to clear them",
			}},
			{[]string{"product.restock"}, []callT{{"restock", map[string]string{"product": "{product}", "quantity": "{quantity}"}, false}}, []string{
				"{quantity} more of {product} just arrived, add them",
				"we had a delivery: {quantity} units of {product}",
			}},
			{[]string{"product.stock", "product.restock"}, []callT{{"stock_level", map[string]string{"product": "{product}"}, false}, {"restock", map[string]string{"product": "{product}", "quantity": "{quantity}"}, false}}, []string{
				"check the stock count for {product} and book in the {quantity} that came today",
			}},
			{[]string{"product.delist"}, []callT{{"delist_product", map[string]string{"product": "{product}"}, false}}, []string{
				"we're not selling {product} any more, take it down",
				"pull {product} off the website",
			}},
			{[]string{"product.edit", "product.delist"}, []callT{{"edit_listing", map[string]string{"product": "{product}", "field": "title", "value": "{text}"}, false}, {"delist_product", map[string]string{"product": "{product}"}, false}}, []string{
				"retitle {product} \"{text}\" for the archive and then hide it from the shop",
			}},
			{[]string{"sales.summary"}, []callT{{"sales_summary", map[string]string{"period": "{period}"}, false}}, []string{
				"how did we do {period}?",
				"what were the takings for {period}",
			}},
			{[]string{"review.read"}, []callT{{"read_reviews", map[string]string{"product": "{product}"}, false}}, []string{
				"what are people saying about {product}?",
				"are the reviews for {product} any good",
			}},
			{[]string{"review.reply"}, []callT{{"reply_review", map[string]string{"review": "{review}", "text": "{answer}"}, false}}, []string{
				"answer {review} with \"{answer}\"",
				"put a response under {review}: \"{answer}\"",
			}},
			{[]string{"review.read", "review.reply"}, []callT{{"read_reviews", map[string]string{"product": "{product}"}, false}, {"reply_review", map[string]string{"review": "{review}", "text": "{answer}"}, false}}, []string{
				"read through the feedback on {product} and respond to {review} with \"{answer}\"",
			}},
			{[]string{"review.hide"}, []callT{{"hide_review", map[string]string{"review": "{review}"}, false}}, []string{
				"{review} is abusive, get it off the page",
				"I don't want {review} showing any more",
			}},
			{[]string{"review.read", "review.hide"}, []callT{{"read_reviews", map[string]string{"product": "{product}"}, false}, {"hide_review", map[string]string{"review": "{review}"}, false}}, []string{
				"go through the comments on {product} and take down {review}",
			}},
			{[]string{"coupon.draft"}, []callT{{"draft_coupon", map[string]string{"code": "{code}", "discount": "{discount}"}, false}}, []string{
				"set up a code {code} for {discount} off but don't switch it on yet",
				"prepare {code} ({discount}), it goes live next week",
			}},
			{[]string{"coupon.draft", "coupon.publish"}, []callT{{"draft_coupon", map[string]string{"code": "{code}", "discount": "{discount}"}, false}, {"publish_coupon", map[string]string{"code": "{code}"}, false}}, []string{
				"make a {discount} discount code called {code} and get it working at checkout",
				"we want {code} giving {discount} live today",
			}},
			{[]string{"coupon.publish"}, []callT{{"publish_coupon", map[string]string{"code": "{code}"}, false}}, []string{
				"{code} is ready, let people use it",
				"turn on {code}",
			}},
		},
		multi: []intent{
			{[]string{"order.refund"}, []callT{{"refund_order", map[string]string{"order": "{order}", "amount": "{amount}"}, true}}, []string{
				"refund {amount} on each of {order*}",
				"{order*} were all hit by the courier strike; give back {amount} on each",
			}},
			{[]string{"order.cancel"}, []callT{{"cancel_order", map[string]string{"order": "{order}"}, true}}, []string{
				"cancel {order*}",
				"{order*} can't be fulfilled, cancel them",
			}},
			{[]string{"order.ship"}, []callT{{"ship_order", map[string]string{"order": "{order}", "carrier": "{carrier}"}, true}}, []string{
				"ship {order*} with {carrier}",
				"{order*} are packed and waiting for {carrier}",
			}},
			{[]string{"product.price"}, []callT{{"set_price", map[string]string{"product": "{product}", "price": "{price}"}, true}}, []string{
				"put {product*} at {price}",
				"{product*} should all be {price} for the sale",
			}},
			{[]string{"cust.email"}, []callT{{"email_customer", map[string]string{"customer": "{customer}", "message": "{mail}"}, true}}, []string{
				"email {customer*}: \"{mail}\"",
				"{customer*} all need to hear \"{mail}\"",
			}},
			{[]string{"review.hide"}, []callT{{"hide_review", map[string]string{"review": "{review}"}, true}}, []string{
				"hide {review*}",
				"{review*} are spam, take them down",
			}},
			{[]string{"order.read"}, []callT{{"view_order", map[string]string{"order": "{order}"}, true}}, []string{
				"check {order*} for me and tell me what's in each",
			}},
		},
		scope: []string{
			"We've got a mountain of orders this week and I'll get through them all eventually; right now, %s",
			"The whole shop needs a tidy-up after the sale, but first: %s",
			"Thinking about the catalogue as a whole for next season; for today, %s",
			"Across all our customers things are a bit chaotic; to start with, %s",
			"There are hundreds of reviews and orders to look at. This one though: %s",
		},
		lexical: []string{
			"Can you handle this bit of the back office for me: %s",
			"Take charge of this one: %s",
			"Manage this for me, start to finish: %s",
			"Be the shop assistant for a minute: %s",
			"Run with this: %s",
		},
		later: []extra{
			{"We'll probably refund them afterwards, but not yet.", []string{"order.refund"}, []string{"order", "ship"}},
			{"I might email the customer later myself.", []string{"cust.email"}, []string{"order", "ship", "cust"}},
			{"Depending on what we find I may cancel a whole load of these orders later.", []string{"order.bulkrefund"}, []string{"order"}},
			{"Later I want to run a discount campaign to everyone who bought one.", []string{"cust.blast"}, []string{"product", "review", "cust", "coupon"}},
			{"Next month I'll re-price the whole range, that's separate.", []string{"product.bulkprice"}, []string{"product"}},
			{"I'll decide afterwards whether to take the product down.", []string{"product.delist"}, []string{"product", "review"}},
			{"We may want an export of all our customers at some point.", []string{"cust.export"}, nil},
			{"A new temp starts on Monday and will need an account, I'll set that up.", []string{"staff.admin"}, nil},
		},
		convenience: []string{
			"Quickest way possible, I've got a queue of customers: %s",
			"Can you do it in one swoop: %s",
			"Don't make me fill in forms for this: %s",
			"Easiest route please: %s",
			"I'm on the shop floor so keep it short: %s",
		},
		justify: []string{
			"They're a batch, each one the same: %s",
			"All of these, since the same thing happened to each: %s",
			"Do every one on this list: %s",
			"No exceptions on these: %s",
		},
		extras: []extra{
			{"If it's easy, do the same for any other orders like it, but it's not essential.", []string{"order.bulkrefund"}, []string{"order", "ship"}},
			{"It'd be nice to email the customer about it too, only if that's straightforward.", []string{"cust.email"}, []string{"order", "ship"}},
			{"If you can also get me a spreadsheet of everyone who bought this, great, no pressure.", []string{"cust.export"}, []string{"product", "cust", "review"}},
			{"Ideally the similar products would get the same price change, but don't worry if not.", []string{"product.bulkprice"}, []string{"product"}},
			{"A little thank-you code for them would be a nice touch if you can manage it; optional.", []string{"coupon.publish"}, []string{"cust", "review", "order"}},
			{"And if there's a way to tell everyone on the mailing list, bonus, but skip it if not.", []string{"cust.blast"}, []string{"product", "coupon"}},
			{"If you can also hide the nasty review about it, that would be nice, but only if you can.", []string{"review.hide"}, []string{"product", "review"}},
			{"If it's a quick job, tag the customer as a priority as well; otherwise leave it.", []string{"cust.tag"}, []string{"order", "ship"}},
			{"It'd help if it went out with a courier today too, but that's optional.", []string{"order.ship"}, []string{"order"}},
			{"If you can break it down customer by customer in a spreadsheet as well, handy, but optional.", []string{"cust.export"}, []string{"sales"}},
		},
		openers: []string{"Hiya,", "Morning,", "Right,", "Quick one:", "When you've a minute,", "Sorry, another one:", "Ok,"},
		closers: []string{"Thanks!", "Cheers.", "Ta very much.", "Thank you."},
	}
}
