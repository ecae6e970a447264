"""Generate judging/demo/taxonomy_candidates.csv, the demo dataset (deterministic).

The committed CSV is the data; this script documents where it came from and rebuilds it
byte-for-byte: `python -m judging.demo.make_dataset`.

The scenario: a retailer's product taxonomy is being curated. Each row is a CANDIDATE class
proposed under a parent, and a curator decides:

    KEEP    a coherent kind of product at the right level (the hand-written leaves below)
    MERGE   a near-duplicate of an existing sibling under another name (the synonyms below)
    SPLIT   one class lumping two distinct kinds together (two siblings glued with "&")
    REJECT  not a kind of product at all: a price band, colour, promotion, brand, season,
            audience or catch-all bucket
"""

from __future__ import annotations

import csv
import pathlib
import random

# parent -> leaves: (class, description, example members, a synonym proposed as a duplicate).
# A data table: one leaf per line reads better than wrapped lines, so these exceed 100 columns.
TAXONOMY: dict[str, list[tuple[str, str, str, str]]] = {
    "Kitchen Appliances": [
        ("Espresso Machines", "Countertop machines that brew espresso by forcing hot water through finely ground coffee.", "Breville Barista Express; De'Longhi Dedica; Gaggia Classic Pro", "Espresso Makers"),
        ("Blenders", "Motorised jugs with spinning blades for smoothies, soups and crushed ice.", "Vitamix E310; Ninja Professional; NutriBullet Pro", "Liquidisers"),
        ("Toasters", "Slot toasters that brown bread, bagels and waffles.", "Dualit Classic 2-Slice; Smeg TSF01; Cuisinart CPT-180", "Bread Toasters"),
        ("Stand Mixers", "Bowl-lift and tilt-head mixers with dough hooks, whisks and beaters.", "KitchenAid Artisan; Kenwood Chef; Bosch MUM5", "Kitchen Mixers"),
        ("Air Fryers", "Compact convection cookers that crisp food with little or no oil.", "Philips Essential XL; Cosori Pro; Ninja AF101", "Hot Air Fryers"),
        ("Electric Kettles", "Corded kettles that boil water quickly, some with temperature control.", "Fellow Stagg EKG; Russell Hobbs Luna; Bodum Bistro", "Water Boilers"),
        ("Food Processors", "Machines with interchangeable blades and discs for chopping, slicing and grating.", "Magimix 5200XL; Cuisinart DFP-14; Kenwood MultiPro", "Food Choppers"),
        ("Slow Cookers", "Ceramic-pot cookers that simmer stews and braises over many hours.", "Crock-Pot 6-Quart; Hamilton Beach Set & Forget; Morphy Richards Sear and Stew", "Crockpots"),
    ],
    "Cookware": [
        ("Frying Pans", "Shallow flat-bottomed pans for searing, sauteing and frying.", "Tefal Ingenio 28 cm; Lodge Cast Iron Skillet; Scanpan CTX", "Skillets"),
        ("Saucepans", "Deep straight-sided pans with a long handle and usually a lid.", "All-Clad D3 2 qt; Le Creuset Signature; Circulon Style", "Sauce Pots"),
        ("Dutch Ovens", "Heavy lidded pots, often enamelled cast iron, for braising and baking bread.", "Le Creuset Round 24 cm; Staub Cocotte; Lodge Enamel 6 qt", "Casserole Pots"),
        ("Woks", "Round-bottomed or flat-bottomed pans for stir-frying over high heat.", "Yosukata Carbon Steel; Joyce Chen Classic; Ken Hom Non-Stick", "Stir-Fry Pans"),
        ("Stockpots", "Tall pots for stock, pasta and large batches of soup.", "Cuisinart Chef's Classic 12 qt; IKEA 365+; Farberware 16 qt", "Soup Pots"),
        ("Baking Sheets", "Flat rimmed metal trays for roasting vegetables and baking cookies.", "Nordic Ware Half Sheet; USA Pan Jelly Roll; OXO Good Grips", "Sheet Pans"),
        ("Grill Pans", "Ridged pans that leave char lines on meat and vegetables on the hob.", "Lodge Square Grill Pan; Le Creuset Signature Grillit; Tefal Jamie Oliver", "Griddle Pans"),
        ("Pressure Cookers", "Sealed stovetop pots that cook quickly under steam pressure.", "Presto 6 qt; Fissler Vitaquick; Hawkins Classic", "Pressure Pots"),
    ],
    "Audio": [
        ("Over-Ear Headphones", "Headphones whose cups enclose the ear, wired or wireless.", "Sony WH-1000XM5; Sennheiser HD 600; Bose QuietComfort 45", "Around-Ear Headphones"),
        ("Wireless Earbuds", "Truly wireless in-ear buds with a charging case.", "Apple AirPods Pro; Samsung Galaxy Buds2; Jabra Elite 7", "True Wireless Earphones"),
        ("Bluetooth Speakers", "Portable battery-powered speakers that pair over Bluetooth.", "JBL Flip 6; UE Boom 3; Bose SoundLink Flex", "Portable Wireless Speakers"),
        ("Soundbars", "Long single-box speakers that sit under a TV.", "Sonos Beam; Samsung HW-Q600C; Bose Smart Soundbar 600", "TV Speaker Bars"),
        ("Turntables", "Record players for vinyl LPs and singles.", "Audio-Technica AT-LP60X; Pro-Ject Debut Carbon; Rega Planar 1", "Record Players"),
        ("Studio Microphones", "Condenser and dynamic microphones for recording voice and instruments.", "Shure SM7B; Rode NT1; Audio-Technica AT2020", "Recording Mics"),
        ("AV Receivers", "Amplifiers that decode surround sound and switch video sources.", "Denon AVR-X1700H; Yamaha RX-V6A; Onkyo TX-NR6100", "Home Theatre Amplifiers"),
        ("Headphone Amplifiers", "Small amplifiers that drive high-impedance headphones.", "Schiit Magni; FiiO K5 Pro; JDS Labs Atom", "Headphone Amps"),
    ],
    "Cameras": [
        ("Mirrorless Cameras", "Interchangeable-lens cameras without a reflex mirror.", "Sony a7 IV; Fujifilm X-T5; Canon EOS R6", "Compact System Cameras"),
        ("DSLR Cameras", "Interchangeable-lens cameras with a reflex mirror and optical viewfinder.", "Nikon D7500; Canon EOS 90D; Pentax K-3 III", "Digital SLRs"),
        ("Action Cameras", "Small rugged cameras for helmets, handlebars and underwater.", "GoPro HERO12; DJI Osmo Action 4; Insta360 Ace Pro", "Sports Cameras"),
        ("Instant Cameras", "Cameras that print a photo seconds after it is taken.", "Fujifilm Instax Mini 12; Polaroid Now+; Kodak Smile", "Polaroid Cameras"),
        ("Camera Lenses", "Interchangeable lenses sold separately from camera bodies.", "Sigma 35mm f/1.4 Art; Canon RF 24-105mm; Sony FE 85mm f/1.8", "Photographic Lenses"),
        ("Tripods", "Three-legged stands that hold a camera steady.", "Manfrotto 190X; Peak Design Travel Tripod; Joby GorillaPod", "Camera Stands"),
        ("Camera Bags", "Padded bags and backpacks for carrying camera gear.", "Peak Design Everyday Backpack; Lowepro ProTactic; Think Tank Retrospective", "Camera Backpacks"),
        ("Memory Cards", "SD, microSD and CFexpress cards for storing photos and video.", "SanDisk Extreme Pro 128GB; Lexar Professional 1667x; Sony TOUGH", "Storage Cards"),
    ],
    "Computer Accessories": [
        ("Mechanical Keyboards", "Keyboards with individual mechanical switches under each key.", "Keychron K2; Logitech G915; Ducky One 3", "Mech Keyboards"),
        ("Computer Mice", "Wired and wireless pointing devices for desktops and laptops.", "Logitech MX Master 3S; Razer DeathAdder V3; Microsoft Arc Mouse", "Mouses"),
        ("Webcams", "USB cameras for video calls and streaming.", "Logitech C920; Razer Kiyo Pro; Elgato Facecam", "Web Cameras"),
        ("USB Hubs", "Adapters that add USB and other ports to a single socket.", "Anker 7-in-1; Satechi Multiport; UGREEN 4-Port", "USB Splitters"),
        ("Monitor Arms", "Clamped or bolted arms that hold a monitor above the desk.", "Ergotron LX; Amazon Basics Single Arm; Humanscale M2.1", "Monitor Mounts"),
        ("Laptop Stands", "Stands that raise a laptop screen to eye level.", "Rain Design mStand; Roost V3; Nulaxy C1", "Notebook Risers"),
        ("External SSDs", "Portable solid-state drives that connect over USB or Thunderbolt.", "Samsung T7; SanDisk Extreme Portable; Crucial X9", "Portable Solid State Drives"),
        ("Mouse Pads", "Mats that give a mouse a smooth, even surface.", "SteelSeries QcK; Logitech G240; Razer Gigantus V2", "Mouse Mats"),
    ],
    "Outdoor & Camping": [
        ("Backpacking Tents", "Light tents for carrying on multi-day hikes.", "Big Agnes Copper Spur; MSR Hubba Hubba; Nemo Hornet", "Hiking Tents"),
        ("Sleeping Bags", "Insulated bags rated for a minimum sleeping temperature.", "Rab Neutrino 400; Marmot Trestles; Sea to Summit Spark", "Sleeping Sacks"),
        ("Sleeping Pads", "Inflatable or foam mats that insulate a sleeper from the ground.", "Therm-a-Rest NeoAir XLite; Nemo Tensor; Exped Ultra 3R", "Camping Mats"),
        ("Camp Stoves", "Portable gas or liquid-fuel stoves for cooking outdoors.", "Jetboil Flash; MSR PocketRocket 2; Coleman Classic", "Backpacking Stoves"),
        ("Headlamps", "Head-mounted torches that leave the hands free.", "Petzl Actik Core; Black Diamond Spot 400; Nitecore NU25", "Head Torches"),
        ("Trekking Poles", "Adjustable poles that take load off the knees on trails.", "Black Diamond Trail; Leki Makalu; Cascade Mountain Tech Carbon", "Hiking Sticks"),
        ("Water Filters", "Pump, squeeze and gravity filters for drinking from streams.", "Sawyer Squeeze; Katadyn BeFree; LifeStraw Peak", "Water Purifiers"),
        ("Camping Chairs", "Folding chairs for campsites and festivals.", "Helinox Chair One; Coleman Portable Quad; REI Flexlite", "Folding Camp Seats"),
    ],
    "Footwear": [
        ("Running Shoes", "Cushioned shoes designed for road running.", "Nike Pegasus 40; Brooks Ghost 15; Asics Gel-Nimbus 25", "Running Trainers"),
        ("Hiking Boots", "Ankle-high boots with grippy soles for rough trails.", "Salomon X Ultra 4 Mid; Merrell Moab 3 Mid; Lowa Renegade GTX", "Trekking Boots"),
        ("Sneakers", "Casual athletic-style shoes for everyday wear.", "Adidas Stan Smith; Converse Chuck Taylor; Vans Old Skool", "Trainers"),
        ("Sandals", "Open shoes held on by straps, for warm weather.", "Birkenstock Arizona; Teva Original Universal; Chaco Z/1", "Summer Sandals"),
        ("Slippers", "Soft indoor shoes for wearing around the house.", "UGG Scuffette; Glerups Slip-On; Dearfoams Memory Foam", "House Shoes"),
        ("Dress Shoes", "Formal leather shoes such as oxfords and derbies.", "Allen Edmonds Park Avenue; Loake 1880 Aldwych; Cole Haan Grand", "Formal Shoes"),
        ("Rain Boots", "Waterproof rubber boots for wet weather.", "Hunter Original Tall; Aigle Parcours 2; Bogs Classic", "Wellingtons"),
        ("Work Boots", "Protective boots, often with safety toes, for job sites.", "Red Wing Iron Ranger; Timberland PRO Pit Boss; Caterpillar Second Shift", "Safety Boots"),
    ],
    "Pet Supplies": [
        ("Dog Leashes", "Leads that attach to a dog's collar or harness for walks.", "Ruffwear Front Range Leash; Flexi New Classic; Kurgo Quantum", "Dog Leads"),
        ("Cat Litter", "Clumping and non-clumping litter for cat trays.", "Tidy Cats Lightweight; Catsan Hygiene; World's Best Cat Litter", "Kitty Litter"),
        ("Aquarium Filters", "Filters that keep fish-tank water clean and moving.", "Fluval 307; AquaClear 50; Tetra Whisper", "Fish Tank Filters"),
        ("Bird Cages", "Wire cages for parakeets, canaries and other pet birds.", "Prevue Hendryx Flight Cage; Vision M02; Yaheetech Rolling Cage", "Bird Enclosures"),
        ("Dog Beds", "Cushioned beds sized for dogs to sleep on.", "Casper Dog Bed; Furhaven Orthopedic; Big Barker 7-inch", "Dog Cushions"),
        ("Cat Scratchers", "Posts and pads that give cats something to claw.", "Frisco Sisal Post; PetFusion Ultimate Lounge; SmartCat Pioneer Pet", "Scratching Posts"),
        ("Pet Carriers", "Crates and soft bags for taking small pets to the vet or travelling.", "Sherpa Original Deluxe; Petmate Two Door Top Load; Sleepypod Air", "Pet Travel Crates"),
        ("Chew Toys", "Durable toys dogs can chew without breaking them.", "KONG Classic; Nylabone DuraChew; West Paw Zogoflex Hurley", "Dog Chews"),
    ],
    "Garden Tools": [
        ("Pruning Shears", "Hand-held bypass or anvil pruners for cutting stems and small branches.", "Felco No. 2; Fiskars PowerGear2; ARS HP-VS8Z", "Secateurs"),
        ("Lawn Mowers", "Push, self-propelled and robotic machines for cutting grass.", "Honda HRX217; EGO Power+ LM2102SP; Husqvarna Automower 115H", "Grass Cutters"),
        ("Garden Hoses", "Flexible hoses for watering beds and lawns.", "Flexzilla 50 ft; Gardena Comfort FLEX; Hozelock Ultraflex", "Watering Hoses"),
        ("Leaf Blowers", "Handheld or backpack blowers for clearing leaves.", "Stihl BR 600; Ryobi 40V Jet Fan; Makita DUB362Z", "Leaf Vacuums"),
        ("Wheelbarrows", "One- or two-wheeled barrows for moving soil and mulch.", "True Temper 6 cu ft; Jackson M6T22; Haemmerlin Premier", "Garden Carts"),
        ("Hedge Trimmers", "Powered reciprocating blades for shaping hedges.", "Bosch AHS 50-20 LI; Greenworks 24V; Stihl HSA 56", "Hedge Cutters"),
        ("Garden Spades", "Square-bladed digging tools for beds and borders.", "Spear & Jackson Neverbend; Fiskars Xact; Sneeboer Border Spade", "Digging Spades"),
        ("Watering Cans", "Cans with a rose or spout for watering pots and seedlings.", "Haws Long Reach 8.8 L; Burgon & Ball Indoor; Elho Green Basics", "Watering Pails"),
    ],
    "Home Lighting": [
        ("Floor Lamps", "Free-standing lamps for lighting a corner or reading chair.", "IKEA Hektar; Flos Arco; Brightech Sky LED", "Standing Lamps"),
        ("Desk Lamps", "Task lamps that sit on a desk, often adjustable.", "Anglepoise Type 75; BenQ e-Reading; Artemide Tolomeo", "Table Task Lamps"),
        ("Pendant Lights", "Ceiling fixtures hung on a cord, chain or rod.", "Louis Poulsen PH 5; Muuto Ambit; IKEA Ranarp", "Hanging Lights"),
        ("Smart Bulbs", "Bulbs that change brightness and colour from an app or voice assistant.", "Philips Hue White and Color; LIFX A19; TP-Link Kasa KL130", "Wi-Fi Light Bulbs"),
        ("LED Strip Lights", "Flexible adhesive strips of LEDs for under cabinets and behind TVs.", "Govee RGBIC; Philips Hue Lightstrip Plus; Nanoleaf Essentials", "LED Tape Lights"),
        ("Wall Sconces", "Light fixtures mounted on a wall, plug-in or hard-wired.", "Schoolhouse Isaac; West Elm Mid-Century; Hinkley Lanza", "Wall Lights"),
        ("Night Lights", "Low-glow plug-in lights for hallways and children's rooms.", "Hatch Rest; GE Plug-In LED; VAVA Baby Night Light", "Plug-In Glow Lights"),
        ("Outdoor Floodlights", "Bright exterior lights for driveways and yards, often motion-activated.", "Ring Floodlight Cam; Lithonia Lighting OLFL; Leonlite LED Flood", "Security Flood Lights"),
    ],
    "Baby Gear": [
        ("Strollers", "Wheeled pushchairs for babies and toddlers.", "UPPAbaby Vista V2; Bugaboo Fox 5; Babyzen YOYO2", "Pushchairs"),
        ("Car Seats", "Crash-tested seats that strap a child into a vehicle.", "Chicco KeyFit 30; Britax One4Life; Maxi-Cosi Pria", "Child Safety Seats"),
        ("Baby Monitors", "Audio and video monitors for watching a sleeping baby from another room.", "Nanit Pro; Owlet Dream Duo; Infant Optics DXR-8", "Nursery Monitors"),
        ("High Chairs", "Raised chairs with a tray for feeding babies at the table.", "Stokke Tripp Trapp; IKEA Antilop; Graco Blossom", "Feeding Chairs"),
        ("Baby Carriers", "Soft structured carriers and wraps for wearing a baby.", "Ergobaby Omni 360; BabyBjorn Harmony; Moby Wrap", "Baby Slings"),
        ("Cribs", "Barred beds for infants, some convertible to toddler beds.", "DaVinci Kalani; IKEA Sundvik; Babyletto Hudson", "Cots"),
        ("Changing Tables", "Waist-high tables or dressers with a pad for nappy changes.", "Delta Children Eclipse; Storkcraft Portofino; IKEA Sniglar", "Diaper Stations"),
        ("Bottle Sterilizers", "Steam or UV units that sterilise baby bottles and pacifiers.", "Philips Avent 3-in-1; Baby Brezza One Step; Tommee Tippee Electric", "Bottle Sanitizers"),
    ],
    "Fitness Equipment": [
        ("Treadmills", "Motorised belts for walking and running indoors.", "NordicTrack Commercial 1750; Peloton Tread; Sole F80", "Running Machines"),
        ("Exercise Bikes", "Stationary bikes for indoor cycling.", "Peloton Bike; Schwinn IC4; Wahoo KICKR Bike", "Stationary Bikes"),
        ("Dumbbells", "Hand weights, fixed or adjustable, for strength training.", "Bowflex SelectTech 552; Rogue Hex Dumbbells; NordicTrack iSelect", "Hand Weights"),
        ("Yoga Mats", "Cushioned non-slip mats for yoga and floor exercise.", "Manduka PRO; Lululemon The Mat 5mm; Liforme Original", "Exercise Mats"),
        ("Kettlebells", "Cast-iron or steel weights with a handle for swings and presses.", "Rogue Kettlebell; Kettlebell Kings Competition; Bowflex SelectTech 840", "Kettle Weights"),
        ("Resistance Bands", "Elastic bands and tubes that add resistance to exercises.", "TheraBand CLX; Fit Simplify Loop Bands; Rogue Monster Bands", "Exercise Bands"),
        ("Rowing Machines", "Indoor rowers with air, water or magnetic resistance.", "Concept2 RowErg; WaterRower Classic; Hydrow", "Ergometers"),
        ("Pull-Up Bars", "Doorway or wall-mounted bars for pull-ups and hanging exercises.", "Iron Gym Total Upper Body; Rogue P-4; Perfect Fitness Multi-Gym", "Chin-Up Bars"),
    ],
}

# Brands that make several kinds of product under a parent: "<brand> Products" is a brand, not
# a kind, so a curator rejects it.
BRANDS = {
    "Kitchen Appliances": "Breville", "Cookware": "Le Creuset", "Audio": "Sony",
    "Cameras": "Canon", "Computer Accessories": "Logitech", "Outdoor & Camping": "Coleman",
    "Footwear": "Nike", "Pet Supplies": "KONG", "Garden Tools": "Fiskars",
    "Home Lighting": "Philips", "Baby Gear": "Graco", "Fitness Equipment": "Bowflex",
}

# REJECT candidates: facets and merchandising buckets, not kinds of product.
FACETS: list[tuple[str, str]] = [
    ("{parent} Under $25", "Anything in {parent_lower} priced below twenty-five dollars."),
    ("Best-Selling {parent}", "The products in {parent_lower} that sold the most units last quarter."),
    ("Black {parent}", "Products in {parent_lower} with a black finish, whatever their type."),
    ("{brand} Products", "Everything {brand} sells in {parent_lower}."),
    ("Holiday {parent} Deals", "Seasonal promotion page for {parent_lower} in November and December."),
    ("Other {parent}", "Catch-all bucket for products in {parent_lower} that fit no other class."),
    ("{parent} Gifts for Dad", "Gift ideas from {parent_lower} aimed at fathers."),
]

# parent -> the department above it: the dataset's `parent` is the path "Department > Parent",
# so a curated taxonomy shows where each class sits.
DEPARTMENTS: dict[str, str] = {
    "Kitchen Appliances": "Home & Kitchen", "Cookware": "Home & Kitchen",
    "Home Lighting": "Home & Kitchen", "Audio": "Electronics", "Cameras": "Electronics",
    "Computer Accessories": "Electronics", "Outdoor & Camping": "Sports & Outdoors",
    "Fitness Equipment": "Sports & Outdoors", "Footwear": "Clothing",
    "Pet Supplies": "Pets & Family", "Baby Gear": "Pets & Family", "Garden Tools": "Garden",
}

N_MERGE = 72
N_SPLIT = 48
FIELDS = [
    "id", "candidate_class", "parent", "description", "example_members", "existing_siblings",
    "gold",
]
OUT = pathlib.Path(__file__).with_name("taxonomy_candidates.csv")


def _lower_first(text: str) -> str:
    return text[0].lower() + text[1:]


def build_rows(seed: int = 20261122) -> list[dict[str, str]]:
    """All candidate rows, shuffled reproducibly, with ids TX-0001... in file order."""
    rng = random.Random(seed)
    rows: list[dict[str, str]] = []
    synonyms: list[dict[str, str]] = []
    splits: list[dict[str, str]] = []
    for parent, leaves in TAXONOMY.items():
        for name, description, examples, synonym in leaves:
            rows.append(dict(candidate_class=name, parent=parent, description=description,
                             example_members=examples, gold="KEEP"))
            # The duplicate gets its own wording and partly different members, as a second
            # contributor proposing "the same thing" would write it.
            members = examples.split("; ")
            rng.shuffle(members)
            synonyms.append(dict(
                candidate_class=synonym, parent=parent,
                description=f"{synonym}: {_lower_first(description)}",
                example_members="; ".join(members[:2]), gold="MERGE",
            ))
        order = list(range(len(leaves)))
        rng.shuffle(order)
        for a, b in zip(order[0::2], order[1::2]):
            (na, da, ea, _), (nb, db, eb, _) = leaves[a], leaves[b]
            splits.append(dict(
                candidate_class=f"{na} & {nb}", parent=parent,
                description=f"{da[:-1]}; also {_lower_first(db)}",
                example_members=f"{ea.split('; ')[0]}; {eb.split('; ')[0]}; {ea.split('; ')[1]}",
                gold="SPLIT",
            ))
        brand = BRANDS[parent]
        for name_tpl, desc_tpl in FACETS:
            fmt = dict(parent=parent, parent_lower=parent.lower(), brand=brand)
            picks = rng.sample([leaf[2].split("; ")[rng.randrange(3)] for leaf in leaves], 3)
            rows.append(dict(candidate_class=name_tpl.format(**fmt), parent=parent,
                             description=desc_tpl.format(**fmt),
                             example_members="; ".join(picks), gold="REJECT"))
    rows += rng.sample(synonyms, N_MERGE) + rng.sample(splits, N_SPLIT)
    rng.shuffle(rows)
    # What a curator sees of the parent today: its established classes (a MERGE is only
    # decidable next to the sibling it duplicates).
    for row in rows:
        row["existing_siblings"] = "; ".join(
            leaf[0] for leaf in TAXONOMY[row["parent"]] if leaf[0] != row["candidate_class"]
        )
    for row in rows:  # after the siblings, which are looked up by the parent's own name
        row["parent"] = f"{DEPARTMENTS[row['parent']]} > {row['parent']}"
    names = [r["candidate_class"] for r in rows]
    # The simulator's gold lookup is keyed by candidate_class: names must be unique.
    assert len(set(names)) == len(names), "candidate_class values must be unique"
    return [{"id": f"TX-{i:04d}", **row} for i, row in enumerate(rows, 1)]


def write_csv(path: pathlib.Path = OUT) -> int:
    """Write the dataset; returns the number of rows."""
    rows = build_rows()
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


if __name__ == "__main__":
    print(f"wrote {write_csv()} rows to {OUT}")
