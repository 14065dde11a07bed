# -*- coding: utf-8 -*-
"""The invented world of the open-world evaluation set (hand-written data).

Organisations, research fields, scholars, co-author ties and publications.  build.py turns
this into entities.yaml and checks it against the questions in questions.txt.
"""

# key: (canonical name, Chinese name or None, [other forms people write], e-mail stub)
ORGS = {
    "polyu": ("Department of Computing, Hong Kong Polytechnic University", "香港理工大学电子计算学系",
              ["PolyU", "HK PolyU", "香港理工大学", "理大"], "polyu"),
    "hkust": ("Department of Computer Science and Engineering, HKUST", "香港科技大学计算机科学及工程学系",
              ["Hong Kong University of Science and Technology", "香港科技大学", "港科大"], "cse.hkust"),
    "aws": ("Amazon Web Services", None, ["AWS", "Amazon"], "amazon"),
    "kth": ("KTH Royal Institute of Technology", "瑞典皇家理工学院", ["KTH"], "kth"),
    "edin": ("School of Informatics, University of Edinburgh", "爱丁堡大学信息学院",
             ["Edinburgh", "UoE", "爱丁堡大学"], "inf.ed"),
    "tcd": ("School of Computer Science and Statistics, Trinity College Dublin", "都柏林圣三一学院",
            ["TCD", "Trinity College Dublin", "圣三一学院"], "tcd"),
    "uva": ("Informatics Institute, University of Amsterdam", "阿姆斯特丹大学",
            ["UvA", "University of Amsterdam"], "uva"),
    "ntu": ("Department of Computer Science and Information Engineering, National Taiwan University",
            "台湾大学资讯工程学系", ["National Taiwan University", "NTU", "台大"], "csie.ntu"),
    "tsinghua": ("Department of Computer Science and Technology, Tsinghua University", "清华大学计算机科学与技术系",
                 ["Tsinghua", "THU", "清华大学", "清华", "清华大学计算机系"], "tsinghua"),
    "zhipu": ("Zhipu AI", "智谱AI", ["Zhipu", "智谱"], "zhipu"),
    "pku": ("School of Computer Science, Peking University", "北京大学计算机学院",
            ["PKU", "Peking University", "北京大学", "北大"], "pku"),
    "unsw": ("School of Computer Science and Engineering, UNSW Sydney", "新南威尔士大学计算机科学与工程学院",
             ["UNSW", "University of New South Wales", "新南威尔士大学"], "unsw"),
    "casia": ("Institute of Automation, Chinese Academy of Sciences", "中国科学院自动化研究所",
              ["CASIA", "中科院自动化所", "自动化所"], "ia.cas"),
    "eth": ("Department of Computer Science, ETH Zurich", "苏黎世联邦理工学院计算机系",
            ["ETH Zurich", "ETH Zürich", "ETH", "苏黎世联邦理工学院", "苏黎世联邦理工"], "inf.ethz"),
    "epfl": ("School of Computer and Communication Sciences, EPFL", "洛桑联邦理工学院",
             ["EPFL", "École Polytechnique Fédérale de Lausanne", "洛桑联邦理工"], "epfl"),
    "google": ("Google DeepMind", "谷歌DeepMind", ["DeepMind", "Google"], "deepmind"),
    "stuttgart": ("Institut für Visualisierung und Interaktive Systeme, Universität Stuttgart", "斯图加特大学可视化与交互系统研究所",
                  ["Universität Stuttgart", "University of Stuttgart", "Uni Stuttgart", "斯图加特大学"], "visus.uni-stuttgart"),
    "tum": ("School of Computation, Information and Technology, Technische Universität München", "慕尼黑工业大学",
            ["TUM", "TU München", "Technical University of Munich", "慕尼黑工大"], "tum"),
    "spotify": ("Spotify", None, ["Spotify Research"], "spotify"),
    "cmu_ml": ("Machine Learning Department, Carnegie Mellon University", "卡内基梅隆大学机器学习系",
               ["CMU", "Carnegie Mellon", "卡内基梅隆大学", "卡耐基梅隆大学"], "cs.cmu"),
    "cmu_lti": ("Language Technologies Institute, Carnegie Mellon University", "卡内基梅隆大学语言技术研究所",
                ["CMU", "Carnegie Mellon", "卡内基梅隆大学", "卡耐基梅隆大学"], "cs.cmu"),
    "stanford": ("Department of Statistics, Stanford University", "斯坦福大学统计系",
                 ["Stanford", "斯坦福大学", "斯坦福"], "stanford"),
    "sorbonne": ("LIP6, Sorbonne Université", "索邦大学", ["Sorbonne", "Sorbonne University"], "lip6"),
    "msra": ("Microsoft Research Asia", "微软亚洲研究院", ["MSRA", "微软亚研", "微软亚研院"], "microsoft"),
    "kaist": ("School of Computing, KAIST", "韩国科学技术院",
              ["KAIST", "Korea Advanced Institute of Science and Technology"], "kaist"),
    "snu": ("Department of Computer Science and Engineering, Seoul National University", "首尔大学计算机科学与工程系",
            ["SNU", "Seoul National University", "首尔大学"], "snu"),
    "meta": ("Meta AI", None, ["FAIR", "Meta", "Facebook AI Research"], "meta"),
    "bosch": ("Bosch Center for Artificial Intelligence", "博世人工智能中心",
              ["Bosch Center for AI", "BCAI", "Bosch"], "bosch"),
    "oxford": ("Department of Engineering Science, University of Oxford", "牛津大学工程科学系",
               ["Oxford", "University of Oxford", "牛津大学"], "eng.ox"),
    "boun": ("Department of Computer Engineering, Boğaziçi University", "海峡大学计算机工程系",
             ["Boğaziçi University", "Bogazici University", "Boğaziçi"], "boun"),
    "uchile": ("Departamento de Ciencias de la Computación, Universidad de Chile", "智利大学",
               ["Universidad de Chile", "U. de Chile", "DCC"], "dcc.uchile"),
    "broad": ("Broad Institute of MIT and Harvard", "博德研究所", ["Broad Institute", "the Broad"], "broadinstitute"),
    "utokyo": ("Graduate School of Information Science and Technology, The University of Tokyo", "东京大学信息理工学系研究科",
               ["University of Tokyo", "UTokyo", "Todai", "东京大学"], "i.u-tokyo"),
    "iitb": ("Department of Computer Science and Engineering, IIT Bombay", "印度理工学院孟买分校",
             ["IIT Bombay", "IITB", "Indian Institute of Technology Bombay"], "cse.iitb"),
    "zju": ("College of Computer Science and Technology, Zhejiang University", "浙江大学计算机科学与技术学院",
            ["ZJU", "Zhejiang University", "浙江大学", "浙大"], "zju"),
    "nus": ("School of Computing, National University of Singapore", "新加坡国立大学计算机学院",
            ["NUS", "National University of Singapore", "新加坡国立大学", "新国立"], "comp.nus"),
    "alibaba": ("DAMO Academy, Alibaba Group", "阿里巴巴达摩院",
                ["Alibaba", "DAMO Academy", "阿里巴巴", "达摩院", "阿里达摩院"], "alibaba-inc"),
    "fudan": ("School of Computer Science, Fudan University", "复旦大学计算机科学技术学院",
              ["Fudan", "Fudan University", "复旦大学", "复旦"], "fudan"),
    "baidu": ("Baidu Research", "百度研究院", ["Baidu", "百度"], "baidu"),
    "toronto": ("Department of Computer Science, University of Toronto", "多伦多大学计算机系",
                ["University of Toronto", "UofT", "U of T", "多伦多大学"], "cs.toronto"),
    "vector": ("Vector Institute", "Vector人工智能研究所", ["Vector Institute for Artificial Intelligence"], "vectorinstitute"),
    "mila": ("Mila - Quebec AI Institute", "魁北克人工智能研究所", ["Mila", "Mila Québec"], "mila"),
    "nju": ("Department of Computer Science and Technology, Nanjing University", "南京大学计算机科学与技术系",
            ["NJU", "Nanjing University", "南京大学", "南大"], "nju"),
    "inria": ("Inria Paris", "法国国家信息与自动化研究所巴黎中心", ["Inria", "INRIA"], "inria"),
    "sjtu": ("Department of Computer Science and Engineering, Shanghai Jiao Tong University", "上海交通大学计算机科学与工程系",
             ["SJTU", "Shanghai Jiao Tong University", "上海交通大学", "上海交大", "交大"], "sjtu"),
    "beihang": ("School of Computer Science and Engineering, Beihang University", "北京航空航天大学计算机学院",
                ["Beihang University", "BUAA", "Beihang", "北京航空航天大学", "北航"], "buaa"),
    "hit": ("Faculty of Computing, Harbin Institute of Technology", "哈尔滨工业大学计算学部",
            ["HIT", "Harbin Institute of Technology", "哈尔滨工业大学", "哈工大"], "hit"),
    "usp": ("Instituto de Ciências Matemáticas e de Computação, Universidade de São Paulo", "圣保罗大学数学与计算科学研究所",
            ["USP", "ICMC-USP", "Universidade de São Paulo", "University of São Paulo"], "icmc.usp"),
    "sapienza": ("Dipartimento di Informatica, Sapienza Università di Roma", "罗马大学",
                 ["Sapienza", "Sapienza University of Rome"], "di.uniroma1"),
    "uam": ("Escuela Politécnica Superior, Universidad Autónoma de Madrid", "马德里自治大学",
            ["UAM", "Universidad Autónoma de Madrid"], "uam"),
}

# canonical field: (Chinese, [other forms people write])
FIELDS = {
    "stream mining": ("流数据挖掘", []),
    "uncertain data": ("不确定数据", []),
    "data cleaning": ("数据清洗", []),
    "probabilistic databases": ("概率数据库", []),
    "query optimization": ("查询优化", []),
    "entity resolution": ("实体解析", []),
    "spatial databases": ("空间数据库", []),
    "query processing": ("查询处理", []),
    "data lakes": ("数据湖", []),
    "schema matching": ("模式匹配", []),
    "stream processing": ("流处理", []),
    "distributed systems": ("分布式系统", []),
    "time series analysis": ("时间序列分析", ["time series"]),
    "natural language processing": ("自然语言处理", ["NLP"]),
    "machine translation": ("机器翻译", ["MT"]),
    "low-resource languages": ("低资源语言", []),
    "dialogue systems": ("对话系统", []),
    "natural language generation": ("自然语言生成", ["NLG"]),
    "speech translation": ("语音翻译", []),
    "multilingual language models": ("多语言模型", []),
    "speech recognition": ("语音识别", ["ASR"]),
    "statistical machine translation": ("统计机器翻译", ["SMT"]),
    "computational linguistics": ("计算语言学", []),
    "semantic parsing": ("语义解析", []),
    "knowledge graphs": ("知识图谱", ["KG"]),
    "graph neural networks": ("图神经网络", ["GNN", "GNNs"]),
    "data mining": ("数据挖掘", []),
    "recommender systems": ("推荐系统", ["recsys"]),
    "entity alignment": ("实体对齐", []),
    "large language models": ("大语言模型", ["LLMs", "LLM", "大模型"]),
    "pretraining": ("预训练", []),
    "information retrieval": ("信息检索", ["IR"]),
    "social network analysis": ("社交网络分析", []),
    "question answering": ("问答", ["QA"]),
    "code generation": ("代码生成", []),
    "computer vision": ("计算机视觉", ["CV"]),
    "image segmentation": ("图像分割", []),
    "medical image analysis": ("医学图像分析", []),
    "federated learning": ("联邦学习", []),
    "weakly supervised learning": ("弱监督学习", []),
    "database systems": ("数据库系统", ["databases"]),
    "similarity search": ("相似性搜索", []),
    "string matching": ("字符串匹配", []),
    "3D point clouds": ("三维点云", []),
    "pattern recognition": ("模式识别", []),
    "handwriting recognition": ("手写识别", []),
    "brain-inspired computing": ("类脑计算", []),
    "spiking neural networks": ("脉冲神经网络", ["SNN"]),
    "document analysis": ("文档分析", []),
    "neuromorphic hardware": ("神经形态硬件", []),
    "legged robots": ("足式机器人", ["legged robotics"]),
    "reinforcement learning": ("强化学习", ["RL"]),
    "motion planning": ("运动规划", []),
    "3D reconstruction": ("三维重建", []),
    "robotics": ("机器人学", []),
    "optimal control": ("最优控制", []),
    "sim-to-real transfer": ("仿真到现实迁移", ["sim2real"]),
    "neural rendering": ("神经渲染", []),
    "state estimation": ("状态估计", []),
    "event cameras": ("事件相机", []),
    "visualization": ("可视化", []),
    "visual analytics": ("可视分析", []),
    "eye tracking": ("眼动追踪", []),
    "human-computer interaction": ("人机交互", ["HCI"]),
    "explainable AI": ("可解释人工智能", ["XAI"]),
    "scientific visualization": ("科学可视化", []),
    "computer graphics": ("计算机图形学", []),
    "music information retrieval": ("音乐信息检索", ["MIR"]),
    "user modeling": ("用户建模", []),
    "conversational recommendation": ("对话式推荐", []),
    "audio signal processing": ("音频信号处理", []),
    "A/B testing": ("A/B测试", []),
    "probabilistic programming": ("概率编程", []),
    "Bayesian inference": ("贝叶斯推断", []),
    "causal inference": ("因果推断", []),
    "fairness in machine learning": ("机器学习公平性", ["algorithmic fairness"]),
    "statistics": ("统计学", []),
    "self-supervised learning": ("自监督学习", []),
    "vision transformers": ("视觉Transformer", ["ViT"]),
    "efficient inference": ("高效推理", []),
    "video understanding": ("视频理解", []),
    "neural architecture search": ("神经架构搜索", ["NAS"]),
    "AutoML": ("自动机器学习", []),
    "computer architecture": ("计算机体系结构", []),
    "hardware accelerators": ("硬件加速器", []),
    "model compression": ("模型压缩", []),
    "sparse attention": ("稀疏注意力", []),
    "language modeling": ("语言建模", []),
    "uncertainty quantification": ("不确定性量化", []),
    "Bayesian deep learning": ("贝叶斯深度学习", []),
    "autonomous driving": ("自动驾驶", []),
    "3D object detection": ("三维目标检测", []),
    "Gaussian processes": ("高斯过程", []),
    "sensor fusion": ("传感器融合", []),
    "computational biology": ("计算生物学", ["comp bio"]),
    "protein structure prediction": ("蛋白质结构预测", []),
    "bioinformatics": ("生物信息学", []),
    "single-cell genomics": ("单细胞基因组学", []),
    "machine learning": ("机器学习", ["ML"]),
    "statistical genetics": ("统计遗传学", []),
    "protein design": ("蛋白质设计", []),
    "sequence alignment": ("序列比对", []),
    "genomics": ("基因组学", []),
    "optical character recognition": ("光学字符识别", ["OCR"]),
    "digital humanities": ("数字人文", []),
    "learned cardinality estimation": ("学习型基数估计", ["cardinality estimation"]),
    "software engineering": ("软件工程", []),
    "program repair": ("程序修复", ["automated program repair", "APR"]),
    "software testing": ("软件测试", []),
    "fuzzing": ("模糊测试", []),
    "multi-agent systems": ("多智能体系统", []),
    "game theory": ("博弈论", []),
    "mechanism design": ("机制设计", []),
    "approximate nearest neighbor search": ("近似最近邻搜索", ["ANN search"]),
    "vector databases": ("向量数据库", []),
    "learned indexes": ("学习型索引", []),
    "graph databases": ("图数据库", []),
    "optimization": ("优化", []),
    "formal verification": ("形式化验证", []),
    "programming languages": ("程序设计语言", []),
    "edge computing": ("边缘计算", []),
    "privacy": ("隐私保护", []),
    "speech synthesis": ("语音合成", ["TTS"]),
    "learning theory": ("学习理论", []),
    "online learning": ("在线学习", []),
    "bandits": ("多臂老虎机", ["multi-armed bandits"]),
    "computer networks": ("计算机网络", []),
    "network security": ("网络安全", []),
    "intrusion detection": ("入侵检测", []),
    "software-defined networking": ("软件定义网络", ["SDN"]),
    "network measurement": ("网络测量", []),
    "information extraction": ("信息抽取", []),
    "event extraction": ("事件抽取", []),
    "complex networks": ("复杂网络", []),
    "epidemic modeling": ("流行病建模", []),
    "anomaly detection": ("异常检测", []),
    "multimedia": ("多媒体", []),
}

# key, Latin name, Chinese characters or None, org key, interests (strongest first), citations,
# number of papers, gender, position, education, optional dict(name_aliases=[...], bio="...")
SCHOLARS = [
    # --- PolyU / HKUST data management
    ("wong", "Peter K.L. Wong", "黄家麟", "polyu", ["stream mining", "uncertain data", "data cleaning"], 4211, 87, "male",
     "Associate Professor", "PhD, University of Toronto; BEng, The University of Hong Kong",
     dict(name_aliases=["Peter Wong", "P. K. L. Wong"],
          bio="Peter K.L. Wong heads the Data Quality Lab at PolyU. He works on mining sensor and event streams whose values are uncertain, and on cleaning such data cheaply.")),
    ("chanml", "Mei-ling Chan", "陈美玲", "polyu", ["uncertain data", "probabilistic databases", "query optimization"], 2380, 54, "female",
     "Assistant Professor", "PhD, HKUST; BSc, The Chinese University of Hong Kong", {}),
    ("hokw", "Ka-wai Ho", "何家伟", "polyu", ["data cleaning", "entity resolution"], 420, 11, "male",
     "PhD Student", "BEng, Hong Kong Polytechnic University", {}),
    ("leungmty", "Marcus T.Y. Leung", "梁子扬", "hkust", ["spatial databases", "query processing", "uncertain data"], 15620, 203, "male",
     "Chair Professor", "PhD, University of Wisconsin-Madison",
     dict(bio="Marcus T.Y. Leung is Chair Professor at HKUST, where he has taught since 2001. He is known for indexing and querying moving objects whose locations are uncertain, and has supervised more than twenty PhD students.")),
    ("divya", "Divya Raghunathan", None, "aws", ["data cleaning", "data lakes", "schema matching"], 1890, 33, "female",
     "Senior Applied Scientist", "PhD, University of Michigan", {}),
    ("lindqvist", "Tobias Lindqvist", None, "kth", ["stream processing", "distributed systems"], 3050, 61, "male",
     "Professor", "PhD, Uppsala University", {}),
    ("yuen", "Natalie C.Y. Yuen", "阮芷欣", "polyu", ["stream mining", "time series analysis"], 140, 6, "female",
     "PhD Student", "MPhil, The Chinese University of Hong Kong", {}),
    ("nakamura", "Grace Nakamura", None, "aws", ["data lakes", "query optimization"], 980, 19, "female",
     "Applied Scientist", "PhD, University of Washington", {}),
    # --- Edinburgh / Dublin / Amsterdam language technology
    ("vdberg", "Ludo van der Berg", None, "edin", ["natural language processing", "machine translation", "low-resource languages"], 6734, 95, "male",
     "Reader", "PhD, University of Amsterdam", dict(name_aliases=["L. van der Berg"])),
    ("macleod", "Fiona MacLeod", None, "edin", ["dialogue systems", "natural language generation"], 2911, 47, "female",
     "Lecturer", "PhD, University of Glasgow", {}),
    ("obrien", "Sean O'Brien", None, "tcd", ["machine translation", "speech translation"], 1766, 38, "male",
     "Assistant Professor", "PhD, Dublin City University; BA, Trinity College Dublin", {}),
    ("menon", "Rahul Menon", None, "edin", ["low-resource languages", "multilingual language models"], 205, 9, "male",
     "PhD Student", "MTech, IIT Bombay", {}),
    ("nibhriain", "Aoife Ní Bhriain", None, "edin", ["speech recognition", "low-resource languages"], 640, 17, "female",
     "Research Fellow", "PhD, University of Edinburgh", dict(name_aliases=["Aoife Ni Bhriain"])),
    ("vos", "Hendrik J. Vos", None, "uva", ["statistical machine translation", "computational linguistics"], 22100, 240, "male",
     "Professor Emeritus", "PhD, Utrecht University", {}),
    ("fraser", "Duncan Fraser", None, "edin", ["computational linguistics", "semantic parsing"], 1330, 29, "male",
     "Senior Lecturer", "PhD, University of Edinburgh", {}),
    ("devries", "Pieter de Vries", None, "uva", ["machine translation"], 760, 21, "male",
     "Assistant Professor", "PhD, University of Amsterdam", {}),
    ("jansen", "Anneke Jansen", None, "uva", ["computational linguistics"], 2250, 44, "female",
     "Associate Professor", "PhD, Radboud University", {}),
    ("kavanagh", "Aisling Kavanagh", None, "tcd", ["speech translation"], 160, 5, "female",
     "PhD Student", "BA, Trinity College Dublin", {}),
    ("tsai", "Wen-chieh Tsai", "蔡文杰", "ntu", ["speech recognition", "speech translation"], 2700, 51, "male",
     "Associate Professor", "PhD, National Taiwan University", {}),
    # --- Tsinghua / Zhipu knowledge graphs
    ("tangmz", "Mingzhe Tang", "唐明哲", "tsinghua", ["knowledge graphs", "graph neural networks", "data mining"], 28450, 312, "male",
     "Professor", "BS and PhD, Tsinghua University", {}),
    ("lichen_thu", "Chen Li", "李晨", "tsinghua", ["graph neural networks", "recommender systems"], 5120, 66, "female",
     "Associate Professor", "PhD, Peking University", {}),
    ("zhouyt", "Yutong Zhou", "周雨桐", "tsinghua", ["knowledge graphs", "entity alignment"], 1620, 14, "female",
     "PhD Student", "BS, Tsinghua University", {}),
    ("zhaogd", "Guodong Zhao", "赵国栋", "zhipu", ["large language models", "pretraining"], 3890, 29, "male",
     "Research Scientist", "PhD, Tsinghua University", {}),
    ("qiuhw", "Hanwen Qiu", "邱汉文", "tsinghua", ["data mining", "information retrieval"], 41200, 420, "male",
     "Professor Emeritus", "PhD, University of Illinois Urbana-Champaign",
     dict(bio="Hanwen Qiu is Professor Emeritus at Tsinghua University. He founded one of the first data-mining groups in mainland China and later built a large academic search engine with his students.")),
    ("fangrx", "Ruoxi Fang", "方若溪", "tsinghua", ["data mining", "social network analysis"], 1900, 35, "female",
     "Assistant Professor", "PhD, Tsinghua University", {}),
    ("hejy", "Junyi He", "何俊逸", "tsinghua", ["knowledge graphs", "question answering"], 180, 6, "male",
     "PhD Student", "BS, Nankai University", {}),
    ("liangyt", "Yutian Liang", "梁雨田", "zhipu", ["large language models", "code generation"], 620, 12, "male",
     "Research Engineer", "MS, Tsinghua University", {}),
    # --- PKU / UNSW
    ("wangwei_pku", "Wei Wang", "王伟", "pku", ["computer vision", "image segmentation", "medical image analysis"], 9870, 134, "male",
     "Professor", "PhD, Institute of Automation, Chinese Academy of Sciences", {}),
    ("weiwang_unsw", "Wei Wang", None, "unsw", ["database systems", "similarity search", "string matching"], 12300, 180, "male",
     "Professor", "PhD, Fudan University", {}),
    ("liusy", "Siyuan Liu", "刘思远", "pku", ["medical image analysis", "federated learning"], 1880, 21, "male",
     "Postdoctoral Researcher", "PhD, Peking University", {}),
    ("chenjy", "Jiayi Chen", "陈佳怡", "pku", ["image segmentation", "weakly supervised learning"], 315, 8, "female",
     "PhD Student", "BS, Wuhan University", {}),
    ("guoty", "Tianyu Guo", "郭天宇", "pku", ["computer vision", "3D point clouds"], 1460, 27, "male",
     "Assistant Professor", "PhD, Peking University", {}),
    ("tranj", "Jessica Tran", None, "unsw", ["database systems", "learned indexes"], 1500, 24, "female",
     "Lecturer", "PhD, UNSW Sydney", {}),
    ("ashworth", "Benjamin Ashworth", None, "unsw", ["database systems", "graph databases"], 830, 18, "male",
     "Senior Lecturer", "PhD, University of Melbourne", {}),
    # --- CASIA
    ("xuzy", "Zhenyu Xu", "徐振宇", "casia", ["pattern recognition", "computer vision", "handwriting recognition"], 35600, 410, "male",
     "Research Professor", "PhD, Institute of Automation, Chinese Academy of Sciences", {}),
    ("ouyang", "Mingyuan Ouyang", "欧阳明远", "casia", ["brain-inspired computing", "spiking neural networks"], 2750, 48, "male",
     "Associate Professor", "BS, Harbin Institute of Technology; MS and PhD, Zhejiang University", {}),
    ("sunxiao", "Xiao Sun", "孙晓", "casia", ["handwriting recognition", "document analysis"], 1430, 36, "female",
     "Assistant Professor", "PhD, Institute of Automation, Chinese Academy of Sciences", {}),
    ("mazh", "Zihao Ma", "马子豪", "casia", ["spiking neural networks", "neuromorphic hardware"], 96, 5, "male",
     "Master's Student", "BS, Xidian University", {}),
    ("zhengsh", "Shuhan Zheng", "郑书涵", "casia", ["pattern recognition", "handwriting recognition"], 1610, 30, "female",
     "Associate Professor", "PhD, Tsinghua University", {}),
    # --- ETH / EPFL / DeepMind robotics and vision
    ("mueller", "Zoë Müller", None, "eth", ["legged robots", "reinforcement learning", "motion planning"], 7320, 72, "female",
     "Assistant Professor", "PhD, ETH Zurich; MSc, TU Delft", dict(name_aliases=["Zoe Mueller", "Zoe Muller"])),
    ("moreau", "Jean-Luc Moreau", None, "epfl", ["computer vision", "3D reconstruction", "robotics"], 11890, 130, "male",
     "Full Professor", "PhD, Université Paris-Saclay", dict(name_aliases=["Jean Luc Moreau"])),
    ("voegele", "Matthias Vögele", None, "eth", ["motion planning", "optimal control"], 21400, 198, "male",
     "Professor", "Dr. sc. techn., ETH Zurich", dict(name_aliases=["Matthias Voegele"])),
    ("hoffmann", "Lena Hoffmann", None, "eth", ["legged robots", "sim-to-real transfer"], 520, 12, "female",
     "PhD Student", "MSc, RWTH Aachen University", {}),
    ("rossi", "Giulia Rossi", None, "epfl", ["3D reconstruction", "neural rendering"], 1320, 19, "female",
     "Postdoctoral Researcher", "PhD, EPFL", {}),
    ("mensah", "Kwame Mensah-Bonsu", None, "google", ["reinforcement learning", "robotics"], 8800, 57, "male",
     "Staff Research Scientist", "DPhil, University of Oxford; BSc, KNUST", {}),
    ("kaelin", "Reto Kälin", None, "eth", ["robotics", "state estimation"], 2900, 40, "male",
     "Senior Scientist", "PhD, ETH Zurich", dict(name_aliases=["Reto Kaelin"])),
    ("marchetti", "Sophie Marchetti", None, "epfl", ["computer vision", "event cameras"], 1100, 20, "female",
     "Research Scientist", "PhD, University of Zurich", {}),
    ("kuznetsova", "Olga Kuznetsova", None, "epfl", ["neural rendering", "computer graphics"], 3200, 38, "female",
     "Assistant Professor", "PhD, Lomonosov Moscow State University", {}),
    ("obi", "Emeka Obi", None, "google", ["reinforcement learning", "robotics"], 1900, 22, "male",
     "Research Scientist", "PhD, University College London", {}),
    # --- Stuttgart visualisation
    ("schaefer", "Björn Schäfer", None, "stuttgart", ["visualization", "visual analytics", "eye tracking"], 5600, 101, "male",
     "Professor", "Dr. rer. nat., Universität Stuttgart", dict(name_aliases=["Bjorn Schafer", "Bjoern Schaefer"])),
    ("ilic", "Katarina Ilić", None, "stuttgart", ["eye tracking", "human-computer interaction"], 870, 23, "female",
     "Postdoctoral Researcher", "PhD, University of Belgrade", dict(name_aliases=["Katarina Ilic"])),
    ("weber", "Jonas Weber", None, "stuttgart", ["visual analytics", "explainable AI"], 45, 3, "male",
     "PhD Student", "MSc, Universität Stuttgart", {}),
    ("baum", "Hiltrud Baumgärtner", None, "tum", ["scientific visualization", "computer graphics"], 18700, 230, "female",
     "Professor Emerita", "Dr.-Ing., RWTH Aachen University", {}),
    # --- Spotify / KTH recommendation
    ("gutierrez", "Inés Gutiérrez", None, "spotify", ["recommender systems", "music information retrieval"], 3100, 40, "female",
     "Staff Research Scientist", "PhD, Universitat Pompeu Fabra", dict(name_aliases=["Ines Gutierrez"])),
    ("sandberg", "Erik Sandberg", None, "kth", ["recommender systems", "information retrieval", "stream processing"], 6200, 88, "male",
     "Associate Professor", "PhD, KTH Royal Institute of Technology", {}),
    ("okafor", "Daniel Okafor", None, "spotify", ["music information retrieval", "audio signal processing"], 1450, 27, "male",
     "Senior Research Scientist", "PhD, Queen Mary University of London", {}),
    ("svensson", "Klara Svensson", None, "kth", ["conversational recommendation", "information retrieval"], 60, 4, "female",
     "PhD Student", "MSc, Linköping University", {}),
    ("blom", "Henrik Blom", None, "spotify", ["recommender systems", "A/B testing"], 520, 14, "male",
     "Data Scientist", "MSc, Chalmers University of Technology", {}),
    ("nystrom", "Oskar Nyström", None, "kth", ["distributed systems"], 940, 25, "male",
     "Researcher", "PhD, KTH Royal Institute of Technology", {}),
    # --- CMU / Stanford / Sorbonne
    ("whitfield", "J. R. Whitfield", None, "cmu_ml", ["probabilistic programming", "Bayesian inference", "causal inference"], 13200, 120, "male",
     "Professor", "PhD, University of Cambridge", dict(name_aliases=["James R. Whitfield", "James Whitfield", "J.R. Whitfield"])),
    ("natarajan", "Priya Natarajan", None, "cmu_ml", ["causal inference", "fairness in machine learning"], 2400, 35, "female",
     "Assistant Professor", "PhD, Stanford University", {}),
    ("herrera", "Tomás Herrera", None, "cmu_ml", ["Bayesian inference", "probabilistic programming"], 70, 4, "male",
     "PhD Student", "BSc, Pontificia Universidad Católica de Chile", dict(name_aliases=["Tomas Herrera"])),
    ("lindholm", "Rebecca Lindholm", None, "stanford", ["statistics", "causal inference", "Bayesian inference"], 16800, 175, "female",
     "Professor", "PhD, University of California, Berkeley", {}),
    ("iyer", "Siddharth Iyer", None, "cmu_lti", ["natural language processing", "causal inference"], 1100, 20, "male",
     "PhD Student", "BTech, IIT Madras", {}),
    ("goldstein", "Maya Goldstein-Reyes", None, "cmu_ml", ["fairness in machine learning", "causal inference"], 780, 15, "female",
     "Postdoctoral Fellow", "PhD, Cornell University", {}),
    ("whitaker", "Clara Whitaker-Jones", None, "stanford", ["statistics", "causal inference"], 4300, 60, "female",
     "Associate Professor", "PhD, Harvard University", {}),
    ("leroy", "François-Xavier Leroy", None, "sorbonne", ["formal verification", "programming languages"], 4300, 70, "male",
     "Associate Professor (Maître de conférences)", "PhD, Université Paris Cité; École Polytechnique",
     dict(name_aliases=["Francois-Xavier Leroy", "F.-X. Leroy"])),
    # --- MSRA / KAIST / SNU
    ("hanqing", "Hanqing Zhou", "周涵清", "msra", ["computer vision", "self-supervised learning", "vision transformers"], 18300, 92, "male",
     "Principal Researcher", "PhD, The Chinese University of Hong Kong",
     dict(bio="Hanqing Zhou is a Principal Researcher at Microsoft Research Asia, where he leads work on visual representation learning. Before MSRA he did his PhD at CUHK on contrastive learning for images.")),
    ("yangjw", "Jingwen Yang", "杨静雯", "msra", ["vision transformers", "efficient inference"], 2600, 31, "female",
     "Senior Researcher", "PhD, University of Science and Technology of China", {}),
    ("wenjh", "Jiahui Wen", "温佳慧", "msra", ["self-supervised learning", "video understanding"], 1240, 19, "female",
     "Researcher", "PhD, Shanghai Jiao Tong University", {}),
    ("kimsj", "Soo-jin Kim", None, "kaist", ["vision transformers", "neural architecture search", "efficient inference"], 4100, 58, "female",
     "Associate Professor", "PhD, Seoul National University", dict(name_aliases=["Soojin Kim"])),
    ("parkjh", "Ji-hoon Park", None, "kaist", ["neural architecture search", "AutoML"], 380, 10, "male",
     "PhD Student", "BS, KAIST", {}),
    ("leedh", "Dong-hyun Lee", None, "snu", ["computer architecture", "hardware accelerators"], 9400, 140, "male",
     "Professor", "PhD, University of Michigan", {}),
    ("choi", "Min-seo Choi", None, "kaist", ["efficient inference", "model compression"], 650, 13, "female",
     "Postdoctoral Researcher", "PhD, POSTECH", {}),
    ("kwon", "Tae-yang Kwon", None, "snu", ["hardware accelerators", "computer architecture"], 2100, 33, "male",
     "Research Professor", "PhD, Seoul National University",
     dict(bio="Tae-yang Kwon is a Research Professor at Seoul National University. He designs sparse tensor accelerators and has worked with Samsung on memory-side compute.")),
    # --- Meta AI
    ("heyang", "Yang He", "何洋", "meta", ["natural language processing", "sparse attention", "language modeling"], 8900, 45, "male",
     "Research Scientist", "PhD, University of Washington; BS, Zhejiang University", {}),
    ("dubois", "Antoine Dubois", None, "meta", ["machine translation", "multilingual language models"], 6100, 52, "male",
     "Research Scientist Manager", "PhD, Sorbonne Université", {}),
    ("castellanos", "Rosa Castellanos", None, "meta", ["language modeling", "model compression"], 1900, 22, "female",
     "Research Engineer", "MSc, Universidad Autónoma de Madrid", {}),
    # --- Bosch / TUM / Oxford
    ("delacruz", "Ana de la Cruz", None, "bosch", ["uncertainty quantification", "Bayesian deep learning", "autonomous driving"], 3300, 41, "female",
     "Research Scientist", "PhD, Universidad Politécnica de Madrid", {}),
    ("brandt", "Felix Brandt", None, "bosch", ["autonomous driving", "3D object detection"], 2100, 30, "male",
     "Senior Research Engineer", "MSc, Universität Stuttgart", {}),
    ("meissner", "Ulrike Meißner", None, "tum", ["Bayesian deep learning", "Gaussian processes"], 14500, 160, "female",
     "Professor", "PhD, University of Cambridge; Diplom, Universität Heidelberg", dict(name_aliases=["Ulrike Meissner"])),
    ("hartmann", "Lukas Hartmann", None, "bosch", ["3D object detection", "sensor fusion"], 870, 17, "male",
     "Research Engineer", "MSc, Karlsruhe Institute of Technology", {}),
    ("holloway", "Margaret E. Holloway", None, "oxford", ["optimization", "learning theory"], 19800, 150, "female",
     "Professor", "DPhil, University of Oxford",
     dict(bio="Margaret E. Holloway is Professor of Machine Learning at Oxford. Her work explains why adaptive optimisers generalise the way they do, and she co-directs a doctoral training centre in autonomous systems.")),
    ("petrov", "Nikolai Petrov", None, "oxford", ["learning theory", "online learning"], 2100, 30, "male",
     "Postdoctoral Researcher", "DPhil, University of Oxford", {}),
    ("demir", "Ayşe Demir", None, "boun", ["online learning", "bandits"], 1700, 28, "female",
     "Assistant Professor", "PhD, Bilkent University", dict(name_aliases=["Ayse Demir"])),
    # --- computational biology
    ("nunez", "José Núñez", None, "uchile", ["computational biology", "protein structure prediction", "bioinformatics"], 2950, 63, "male",
     "Associate Professor", "PhD, Universidad de Chile", dict(name_aliases=["Jose Nunez"])),
    ("adeyemi", "Oluwaseun Adeyemi", None, "broad", ["single-cell genomics", "computational biology", "machine learning"], 5400, 49, "female",
     "Group Leader", "PhD, University of Cambridge; BSc, University of Lagos", {}),
    ("goldberg", "Hannah Goldberg", None, "broad", ["single-cell genomics", "statistical genetics"], 11200, 88, "female",
     "Institute Member", "PhD, Harvard University", {}),
    ("valdes", "Camila Valdés", None, "uchile", ["protein design", "computational biology"], 95, 3, "female",
     "PhD Student", "BSc, Universidad de Chile", dict(name_aliases=["Camila Valdes"])),
    ("araya", "Martín Araya", None, "uchile", ["bioinformatics", "sequence alignment"], 1200, 40, "male",
     "Assistant Professor", "PhD, Universidad de Concepción", dict(name_aliases=["Martin Araya"])),
    ("eze", "Ngozi Eze", None, "broad", ["statistical genetics", "genomics"], 3600, 52, "female",
     "Senior Computational Scientist", "PhD, University of Oxford", {}),
    # --- Tokyo
    ("yamamoto", "Takeshi Yamamoto", "山本武", "utokyo", ["document analysis", "optical character recognition", "digital humanities"], 4300, 77, "male",
     "Professor", "PhD, Kyoto University", {}),
    ("satoh", "Haruka Sato", None, "utokyo", ["digital humanities", "natural language processing"], 610, 15, "female",
     "Assistant Professor", "PhD, The University of Tokyo", {}),
    ("fujimoto", "Kenji Fujimoto", None, "utokyo", ["optical character recognition"], 80, 3, "male",
     "PhD Student", "MS, Osaka University", {}),
    ("tanabe", "Yuki Tanabe", None, "utokyo", ["natural language processing", "digital humanities"], 1150, 26, "female",
     "Associate Professor", "PhD, Nara Institute of Science and Technology", {}),
    # --- IIT Bombay
    ("krishnamurthy", "Anand Krishnamurthy", None, "iitb", ["database systems", "query optimization", "data lakes"], 5200, 110, "male",
     "Professor", "PhD, University of Wisconsin-Madison", {}),
    ("kulkarni", "Sneha Kulkarni", None, "iitb", ["query optimization", "learned cardinality estimation"], 120, 5, "female",
     "PhD Student", "BTech, College of Engineering Pune", {}),
    ("deshpande", "Rohan Deshpande", None, "iitb", ["data lakes", "schema matching"], 300, 9, "male",
     "Research Associate", "MTech, IIT Bombay", {}),
    # --- ZJU / NUS / Alibaba
    ("huangzh", "Zihan Huang", "黄子涵", "zju", ["recommender systems", "graph neural networks", "data mining"], 3700, 52, "female",
     "Associate Professor", "PhD, National University of Singapore; BS, Zhejiang University", {}),
    ("wulei", "Lei Wu", "吴磊", "zju", ["knowledge graphs", "recommender systems"], 9800, 140, "male",
     "Professor", "PhD, Zhejiang University", {}),
    ("linyx", "Yuxuan Lin", "林雨萱", "zju", ["graph neural networks", "recommender systems"], 210, 7, "female",
     "PhD Student", "BS, Zhejiang University", {}),
    ("chenghr", "Haoran Cheng", "程浩然", "zju", ["causal inference", "recommender systems"], 40, 2, "male",
     "Master's Student", "BS, Sichuan University", {}),
    ("tanbk", "Boon Keat Tan", None, "nus", ["information retrieval", "recommender systems", "multimedia"], 25500, 300, "male",
     "Professor", "PhD, University of Illinois Urbana-Champaign", {}),
    ("yeqy", "Qingyang Ye", "叶清扬", "zju", ["recommender systems", "causal inference"], 1300, 24, "male",
     "Assistant Professor", "PhD, University of Science and Technology of China", {}),
    ("subramanian", "Ravi Subramanian", None, "nus", ["multimedia", "information retrieval"], 4800, 70, "male",
     "Associate Professor", "PhD, National University of Singapore", {}),
    ("konglx", "Lingxiao Kong", "孔令潇", "alibaba", ["information retrieval", "recommender systems"], 1700, 26, "male",
     "Staff Algorithm Engineer", "PhD, Renmin University of China", {}),
    # --- Fudan / Baidu
    ("wanglei_fudan", "Lei Wang", "王磊", "fudan", ["software engineering", "program repair", "large language models"], 6400, 95, "male",
     "Professor", "PhD, Fudan University", {}),
    ("gujia", "Jia Gu", "顾佳", "fudan", ["program repair", "software testing"], 720, 16, "female",
     "PhD Student", "BS, Tongji University", {}),
    ("xuyf", "Yifan Xu", "徐一帆", "fudan", ["software testing", "fuzzing"], 2600, 41, "male",
     "Associate Professor", "BS, Nanjing University; PhD, Fudan University", {}),
    ("panxr", "Xinran Pan", "潘欣然", "fudan", ["software testing", "large language models"], 430, 9, "female",
     "Assistant Professor", "PhD, Peking University",
     dict(bio="Xinran Pan joined Fudan University as an Assistant Professor in 2022 after a PhD at Peking University. She studies how large language models can write and repair unit tests.")),
    ("wanglei_baidu", "Lei Wang", "王雷", "baidu", ["speech synthesis", "speech recognition"], 3100, 40, "male",
     "Principal Architect", "MS, University of Science and Technology of China", {}),
    # --- Toronto / Vector / Mila
    ("mcallister", "Siobhan McAllister", None, "toronto", ["reinforcement learning", "multi-agent systems", "game theory"], 8100, 70, "female",
     "Associate Professor", "PhD, University of Alberta; BSc, Queen's University Belfast", {}),
    ("mehta", "Arjun Mehta", None, "vector", ["multi-agent systems", "reinforcement learning"], 900, 14, "male",
     "Postdoctoral Fellow", "PhD, University of Toronto", {}),
    ("tremblay", "Gabriel Tremblay-Côté", None, "mila", ["game theory", "mechanism design"], 3400, 45, "male",
     "Assistant Professor", "PhD, Université de Montréal", dict(name_aliases=["Gabriel Tremblay-Cote"])),
    ("ouellet", "Camille Ouellet", None, "mila", ["reinforcement learning", "game theory"], 520, 11, "female",
     "PhD Student", "MSc, McGill University",
     dict(bio="Camille Ouellet is a PhD student at Mila working on learning dynamics in repeated games. She previously studied mathematics at McGill.")),
    ("banerjee", "Ishaan Banerjee", None, "toronto", ["multi-agent systems", "robotics"], 340, 8, "male",
     "PhD Student", "BTech, IIT Delhi", {}),
    # --- NJU
    ("qianwb", "Wenbo Qian", "钱文博", "nju", ["similarity search", "database systems", "approximate nearest neighbor search"], 2900, 44, "male",
     "Associate Professor", "PhD, UNSW Sydney", {}),
    ("jiangxy", "Xinyi Jiang", "蒋欣怡", "nju", ["approximate nearest neighbor search", "vector databases"], 45, 2, "female",
     "Master's Student", "BS, Nanjing University", {}),
    ("daizy", "Zhiyuan Dai", "戴志远", "nju", ["vector databases", "information retrieval"], 690, 15, "male",
     "Assistant Researcher", "PhD, Nanjing University", {}),
    # --- Inria
    ("fournier", "Élodie Fournier", None, "inria", ["computer vision", "3D reconstruction", "optimization"], 9900, 88, "female",
     "Research Director", "PhD, École Normale Supérieure",
     dict(name_aliases=["Elodie Fournier"],
          bio="Élodie Fournier is a Research Director at Inria Paris. She works on geometric computer vision, in particular large-scale 3D reconstruction and the optimisation methods behind it.")),
    ("garnier", "Théo Garnier", None, "inria", ["3D reconstruction", "neural rendering"], 30, 2, "male",
     "PhD Student", "MSc, École des Ponts ParisTech", dict(name_aliases=["Theo Garnier"])),
    ("roux", "Mathilde Roux", None, "inria", ["optimization", "computer vision"], 2300, 34, "female",
     "Research Scientist", "PhD, Université Grenoble Alpes", {}),
    # --- SJTU / Alibaba / Baidu
    ("lichen_sjtu", "Li Chen", "陈立", "sjtu", ["federated learning", "edge computing", "distributed systems"], 4700, 79, "male",
     "Associate Professor", "PhD, The University of Hong Kong",
     dict(bio="Li Chen is an Associate Professor at Shanghai Jiao Tong University. He works on federated learning over unreliable edge devices and on systems for training models across data centres.")),
    ("sunyq", "Yuqi Sun", "孙雨琪", "sjtu", ["federated learning", "privacy"], 780, 6, "female",
     "PhD Student", "BS, Shanghai Jiao Tong University", {}),
    ("zhumq", "Mengqi Zhu", "朱梦琪", "sjtu", ["edge computing", "federated learning"], 1200, 23, "female",
     "Assistant Professor", "PhD, The Hong Kong Polytechnic University", {}),
    ("zhanghy", "Haoyu Zhang", "张浩宇", "alibaba", ["large language models", "information retrieval"], 5200, 60, "male",
     "Senior Staff Algorithm Expert", "PhD, Peking University", {}),
    ("tianhao", "Hao Tian", "田浩", "baidu", ["speech recognition", "speech synthesis"], 2000, 30, "male",
     "Senior Engineer", "MS, Beijing University of Posts and Telecommunications", {}),
    # --- Beihang
    ("sima", "Rui Sima", "司马睿", "beihang", ["computer networks", "network security"], 3300, 70, "male",
     "Professor", "PhD, Tsinghua University", {}),
    ("hexf", "Xiaofeng He", "贺晓峰", "beihang", ["network security", "intrusion detection"], 150, 4, "male",
     "PhD Student", "BS, Beihang University", {}),
    ("hanbing", "Bing Han", "韩冰", "beihang", ["software-defined networking", "network measurement", "computer networks"], 1800, 38, "female",
     "Associate Professor", "PhD, Beihang University", {}),
    ("luojm", "Jiaming Luo", "罗嘉明", "beihang", ["network measurement", "computer networks"], 420, 11, "male",
     "Lecturer", "PhD, Beijing University of Posts and Telecommunications", {}),
    # --- HIT
    ("qinjh", "Jiahe Qin", "秦嘉禾", "hit", ["natural language processing", "dialogue systems", "information extraction"], 7600, 120, "male",
     "Professor", "PhD, Harbin Institute of Technology", {}),
    ("songkx", "Kexin Song", "宋可欣", "hit", ["information extraction", "event extraction"], 60, 3, "female",
     "PhD Student", "BS, Harbin Institute of Technology", {}),
    ("baixue", "Xue Bai", "白雪", "hit", ["dialogue systems", "natural language processing"], 880, 16, "female",
     "Associate Professor", "PhD, Harbin Institute of Technology", {}),
    # --- complex networks / time series
    ("albuquerque", "João Pedro Albuquerque", None, "usp", ["complex networks", "time series analysis"], 2600, 58, "male",
     "Associate Professor", "PhD, Universidade de São Paulo",
     dict(name_aliases=["Joao Pedro Albuquerque"],
          bio="João Pedro Albuquerque is an Associate Professor at ICMC, Universidade de São Paulo. He models time series as networks and studies spreading processes on temporal graphs.")),
    ("zanetti", "Marina Zanetti", None, "sapienza", ["complex networks", "epidemic modeling"], 5100, 66, "female",
     "Associate Professor", "PhD, Politecnico di Torino",
     dict(bio="Marina Zanetti is an Associate Professor of computer science at Sapienza University of Rome. She builds models of epidemic spreading on temporal contact networks.")),
    ("fernandez", "Lucía Fernández-Ortega", None, "uam", ["time series analysis", "anomaly detection"], 900, 20, "female",
     "Assistant Professor", "PhD, Universidad Autónoma de Madrid", dict(name_aliases=["Lucia Fernandez-Ortega"])),
]

# ("co", a, b, joint) plain co-authors; ("adv", a, b, joint): a advised b
TIES = """
adv leungmty wong 9
adv leungmty chanml 7
adv wong hokw 6
adv wong yuen 3
co wong chanml 12
co wong divya 5
co wong lindqvist 4
co wong nakamura 2
co chanml divya 2
co divya nakamura 7
co divya krishnamurthy 8
co lindqvist sandberg 8
co lindqvist nystrom 6
co lindqvist lichen_sjtu 2
co yuen albuquerque 2
adv vos vdberg 11
adv vdberg menon 4
adv vdberg nibhriain 6
co vdberg macleod 9
co vdberg obrien 14
co vdberg dubois 3
co vdberg fraser 5
co vdberg devries 2
co obrien macleod 2
co obrien vos 3
co menon nibhriain 2
co macleod fraser 6
co macleod qinjh 4
adv obrien kavanagh 5
co obrien tsai 3
co vos devries 5
co vos jansen 7
adv qiuhw tangmz 12
adv tangmz zhouyt 8
adv tangmz zhaogd 15
adv tangmz hejy 4
co tangmz lichen_thu 21
co tangmz fournier 4
co tangmz kimsj 3
co tangmz fangrx 9
co tangmz liangyt 2
co tangmz wulei 6
co lichen_thu zhaogd 5
co lichen_thu huangzh 4
co zhaogd liangyt 8
co zhaogd zhanghy 6
co zhaogd wanglei_fudan 4
co qiuhw fangrx 4
adv xuzy wangwei_pku 10
adv wangwei_pku liusy 9
adv wangwei_pku chenjy 5
co wangwei_pku hanqing 13
co wangwei_pku ouyang 4
co wangwei_pku guoty 6
adv weiwang_unsw qianwb 4
co weiwang_unsw tranj 10
co weiwang_unsw krishnamurthy 6
co weiwang_unsw ashworth 5
co liusy lichen_sjtu 5
adv xuzy sunxiao 18
co xuzy ouyang 7
co xuzy yamamoto 5
co xuzy zhengsh 6
adv ouyang mazh 3
co ouyang sunxiao 2
co sunxiao zhengsh 4
co sunxiao yamamoto 3
adv voegele mueller 8
adv mueller hoffmann 6
co mueller moreau 3
co mueller mensah 11
co mueller rossi 2
co mueller kaelin 5
adv moreau rossi 7
co moreau voegele 5
co moreau fournier 9
co moreau marchetti 6
co moreau kuznetsova 2
co marchetti rossi 2
co mensah voegele 2
co hoffmann mensah 3
co voegele kaelin 9
co mensah obi 7
co rossi kuznetsova 3
co mensah mcallister 4
adv baum schaefer 7
adv schaefer weber 5
co schaefer ilic 10
co ilic weber 3
co gutierrez sandberg 9
co gutierrez okafor 12
co gutierrez svensson 3
co gutierrez blom 4
adv sandberg svensson 6
co sandberg blom 2
co sandberg nystrom 5
co whitfield natarajan 14
adv whitfield herrera 7
co whitfield iyer 4
co whitfield lindholm 6
adv lindholm natarajan 9
co natarajan iyer 5
co natarajan herrera 2
co natarajan goldstein 6
co whitfield goldstein 3
co lindholm whitaker 8
co whitfield leroy 2
co hanqing yangjw 16
co hanqing kimsj 5
co hanqing heyang 7
co yangjw kimsj 2
co hanqing wenjh 9
co yangjw wenjh 4
adv kimsj parkjh 7
adv leedh kimsj 6
co parkjh leedh 2
co kimsj choi 4
co parkjh choi 3
co leedh kwon 11
co heyang dubois 6
co heyang castellanos 10
co dubois castellanos 2
co dubois fournier 4
co delacruz brandt 13
adv meissner delacruz 8
co delacruz mensah 2
co brandt meissner 3
co brandt hartmann 8
co delacruz hartmann 5
co holloway meissner 3
co nunez adeyemi 6
adv nunez valdes 5
co nunez goldberg 2
co nunez araya 9
adv goldberg adeyemi 10
co goldberg eze 12
co adeyemi eze 3
adv yamamoto satoh 9
adv yamamoto fujimoto 4
co satoh fujimoto 2
co satoh tanabe 4
co yamamoto tanabe 6
adv krishnamurthy kulkarni 6
co krishnamurthy deshpande 4
co kulkarni deshpande 2
co huangzh wulei 11
adv tanbk huangzh 9
adv huangzh linyx 7
adv huangzh chenghr 3
co linyx chenghr 2
co wulei linyx 3
co huangzh yeqy 5
co wulei yeqy 6
co tanbk subramanian 14
co konglx huangzh 2
adv wanglei_fudan gujia 8
co wanglei_fudan xuyf 15
co xuyf gujia 5
co wanglei_fudan panxr 6
co gujia panxr 3
adv mcallister mehta 10
co mcallister tremblay 8
co mehta tremblay 3
co tremblay ouellet 5
co mcallister ouellet 3
co mcallister banerjee 5
adv qianwb jiangxy 5
co qianwb tranj 3
co qianwb daizy 4
co tranj ashworth 4
adv fournier garnier 6
co fournier leroy 2
co fournier roux 5
adv lichen_sjtu sunyq 6
co lichen_sjtu zhanghy 3
co lichen_sjtu zhumq 7
co zhanghy wanglei_baidu 4
co wanglei_baidu tianhao 9
co zhanghy konglx 5
co wanglei_baidu tsai 2
adv holloway petrov 8
co holloway demir 6
co demir petrov 4
adv sima hexf 6
co sima hanbing 12
co sima lichen_sjtu 3
co hanbing luojm 5
co sima luojm 4
adv qinjh songkx 5
co qinjh zhanghy 7
co qinjh baixue 4
co songkx baixue 2
co albuquerque zanetti 7
co albuquerque fernandez 3
co zanetti fernandez 2
"""

# key, title, year, venue, authors (byline order), citations, abstract
PUBS = [
    ("clean_streams", "Cleaning Uncertain Streams in Bounded Memory", 2015, "PVLDB", ["wong", "hokw", "chanml"], 212,
     "Sensor streams carry noisy and missing readings. We clean them online with a fixed memory budget by keeping a small set of possible worlds per window, and prove error bounds for the cleaned answers."),
    ("topk_windows", "Probabilistic Top-k Queries over Sliding Windows", 2011, "ICDE", ["wong", "leungmty"], 388,
     "We define top-k queries over streams of uncertain tuples in a sliding window and give an incremental algorithm whose cost per arriving tuple is logarithmic in the window size."),
    ("data_lake_clean", "Is Your Data Lake Clean? Auditing Schema Drift at Scale", 2021, "SIGMOD", ["divya", "wong", "hokw", "nakamura"], 97,
     "Tables in enterprise data lakes change their schemas silently. We present an auditing service that detects schema drift across millions of files and reports which downstream jobs are affected."),
    ("backpressure", "Backpressure-Aware Sampling for Uncertain Event Streams", 2023, "EDBT", ["yuen", "wong", "lindqvist"], 18,
     "When a stream processor is overloaded it drops events. We sample uncertain events according to their expected influence on query answers, which keeps accuracy high under backpressure."),
    ("possible_worlds", "Possible Worlds, Impossible Budgets: Approximate Query Answering on Probabilistic Databases", 2018, "The VLDB Journal", ["chanml", "leungmty"], 143,
     "Exact query evaluation on probabilistic databases is #P-hard. We give anytime approximation algorithms with confidence guarantees and compare them on three real uncertain datasets."),
    ("moving_objects", "Indexing Moving Objects with Uncertain Locations", 2006, "SIGMOD", ["leungmty"], 905,
     "We propose an index for objects whose positions are known only up to a region of uncertainty, and show how range and nearest-neighbour queries can prune candidates with probabilistic bounds."),
    ("reverse_skyline", "Probabilistic Reverse Skyline Queries", 2009, "VLDB", ["leungmty", "chanml"], 275,
     "We study reverse skyline queries on uncertain data, give a pruning framework based on dominance probabilities, and evaluate it on synthetic and real data."),
    ("hitl_er", "Human-in-the-Loop Entity Resolution with Active Learning", 2022, "CIKM", ["hokw", "wong"], 35,
     "We ask crowd workers only about record pairs whose labels would change the most clusters, cutting labelling costs for entity resolution by half on product and citation data."),
    ("back_translation", "Back-Translation Is Not Enough: Data Augmentation for Truly Low-Resource Languages", 2019, "ACL", ["vdberg", "obrien"], 534,
     "For languages with under ten thousand parallel sentences, back-translation alone gives small gains. We combine it with dictionary-based word replacement and show consistent improvements for eight languages."),
    ("phrase_tables", "Phrase Tables Revisited", 2012, "WMT", ["vos", "vdberg", "devries"], 121,
     "We revisit pruning of phrase tables in statistical translation systems and show that a simple significance test removes half of the entries with no loss in BLEU."),
    ("code_switch", "Code-Switched Speech Recognition for Irish and English", 2020, "Interspeech", ["nibhriain", "obrien", "vdberg"], 64,
     "Irish speakers often switch to English mid-sentence. We collect a code-switched corpus and train a bilingual recogniser that reduces word error rate by 18 percent relative."),
    ("tigrinya", "Can Multilingual Models Count in Tigrinya?", 2024, "EMNLP", ["menon", "vdberg", "macleod"], 7,
     "We probe multilingual language models for number agreement and counting in Tigrinya and find they fail on morphology that is rare in their training data."),
    ("grounded_response", "Grounded Response Generation with Sparse Knowledge", 2017, "SIGDIAL", ["macleod", "vdberg", "fraser"], 88,
     "Dialogue systems that ground responses in documents often copy irrelevant facts. We select a sparse set of knowledge snippets before generation and obtain more faithful responses."),
    ("simul_speech", "Simultaneous Speech Translation with Monotonic Chunking", 2018, "ICASSP", ["obrien", "kavanagh", "tsai"], 150,
     "We translate speech while it is being spoken by splitting the input into monotonic chunks, trading a small loss in quality for a large reduction in delay."),
    ("smt_twenty", "Statistical Machine Translation: Twenty Years Later", 2008, "Computational Linguistics", ["vos", "jansen"], 1630,
     "A survey of two decades of statistical machine translation, from word-based alignment models to phrase-based and syntax-based systems, with lessons for future work."),
    ("hgt_academic", "Heterogeneous Graph Transformers for Academic Knowledge Graphs", 2020, "KDD", ["tangmz", "lichen_thu", "zhouyt"], 1320,
     "Academic graphs link papers, authors, venues and topics. We design a transformer that attends over typed edges and use it for author disambiguation and venue recommendation."),
    ("scholarlm", "ScholarLM: Pretraining Language Models on Citation Networks", 2023, "ACL", ["zhaogd", "tangmz", "liangyt"], 260,
     "We pretrain a language model on scientific text together with its citation links, which improves citation recommendation and paper classification."),
    ("entity_alignment", "Entity Alignment Without Seeds? A Self-Supervised Approach", 2022, "WWW", ["zhouyt", "lichen_thu", "tangmz"], 145,
     "Most entity alignment methods need seed pairs. We align entities of two knowledge graphs with contrastive self-supervision and match seeded methods on five benchmarks."),
    ("supervision_ties", "Inferring Supervision Ties in Co-Authorship Graphs", 2010, "KDD", ["qiuhw", "tangmz", "fangrx"], 1875,
     "We infer which co-authors were advisor and student from the timing of their joint papers using a time-constrained factor graph, reaching high accuracy on a computer science bibliography."),
    ("disamb_zh", "面向学术知识图谱的实体消歧方法研究", 2016, "计算机学报", ["tangmz", "qiuhw"], 96,
     "针对学术知识图谱中同名作者难以区分的问题，提出一种结合合作网络与文本特征的实体消歧方法，在大规模学术数据上验证了其有效性。"),
    ("scholarly_qa", "Question Answering over Scholarly Knowledge Graphs with Program Induction", 2021, "EMNLP", ["hejy", "tangmz"], 77,
     "We answer questions about papers and researchers by inducing short programs over a scholarly knowledge graph, outperforming semantic parsing baselines."),
    ("polyp", "Boundary-Aware Transformers for Polyp Segmentation", 2021, "MICCAI", ["chenjy", "liusy", "wangwei_pku"], 301,
     "Polyp boundaries in colonoscopy images are blurred. We add a boundary branch to a segmentation transformer and improve Dice scores on five public datasets."),
    ("chest_ct", "Federated Segmentation of Chest CT Across Hospitals", 2022, "IEEE Transactions on Medical Imaging", ["liusy", "hanqing", "wangwei_pku"], 178,
     "We train a lung lesion segmentation model across six hospitals without sharing images, using federated learning with personalised normalisation layers."),
    ("scribbles", "Scribbles Are All You Need? Weakly Supervised Segmentation Revisited", 2019, "CVPR", ["wangwei_pku", "hanqing", "xuzy"], 655,
     "We revisit semantic segmentation trained from scribble annotations and show that with a better regularised loss it comes within two points of full supervision."),
    ("boundary_loss_zh", "图像分割中的边界感知损失函数", 2015, "自动化学报", ["wangwei_pku", "xuzy"], 72,
     "提出一种边界感知的损失函数，对目标边界附近的像素赋予更高权重，在多个图像分割数据集上提升了边界精度。"),
    ("edit_joins", "Efficient Edit-Distance Joins on Billion-Scale String Collections", 2016, "SIGMOD", ["weiwang_unsw", "tranj", "qianwb"], 240,
     "We join string collections under an edit-distance threshold at billion scale with a partition-based filter that is distributed over a cluster."),
    ("set_similarity", "Learned Indexes for Set Similarity Search", 2021, "PVLDB", ["tranj", "weiwang_unsw", "ashworth"], 89,
     "We replace inverted-list indexes for set similarity search with learned models that predict where similar sets lie, saving memory and query time."),
    ("topk_string", "Top-k String Similarity Search with Edit-Distance Constraints", 2009, "ICDE", ["weiwang_unsw"], 610,
     "We find the k strings most similar to a query under edit distance using a progressive q-gram filter and a new lower bound."),
    ("handwritten_chinese", "Online Handwritten Chinese Text Recognition with Implicit Language Models", 2013, "IEEE TPAMI", ["sunxiao", "xuzy", "zhengsh"], 980,
     "We recognise online handwritten Chinese text lines without explicit segmentation by combining a character classifier with an implicit language model learned jointly."),
    ("snn_bptt_zh", "脉冲神经网络的时空反向传播训练方法", 2020, "中国科学：信息科学", ["ouyang", "mazh"], 54,
     "提出一种同时在时间和空间维度上反向传播误差的脉冲神经网络训练方法，在多个视觉数据集上取得了接近传统神经网络的精度。"),
    ("spiking_transformers", "Spiking Transformers on a Power Budget", 2023, "NeurIPS", ["mazh", "ouyang", "xuzy"], 41,
     "We build a transformer out of spiking neurons whose energy use can be tuned at inference time, and measure accuracy against power on neuromorphic hardware."),
    ("layout_analysis", "Document Layout Analysis: Where Are We Now?", 2018, "ICDAR", ["sunxiao", "xuzy", "yamamoto"], 233,
     "We review document layout analysis methods and evaluate twelve of them on historical and modern documents under a common protocol."),
    ("dendritic", "Brain-Inspired Continual Learning with Dendritic Gating", 2021, "Neural Networks", ["ouyang", "sunxiao"], 130,
     "Inspired by dendrites, we gate sub-networks per task, which reduces forgetting in continual learning on image and handwriting benchmarks."),
    ("trot_ice", "Learning to Trot on Ice: Sim-to-Real Transfer for Quadrupeds", 2022, "Science Robotics", ["hoffmann", "mueller", "mensah"], 410,
     "We train quadruped locomotion policies in simulation with randomised friction and show that they transfer to icy and wet surfaces outdoors."),
    ("contact_implicit", "Contact-Implicit Planning for Legged Robots", 2017, "IEEE Transactions on Robotics", ["mueller", "voegele", "kaelin"], 690,
     "We plan whole-body motions for legged robots without fixing the contact sequence in advance, by treating contacts as complementarity constraints in trajectory optimisation."),
    ("nerf_grasp", "Neural Radiance Fields for Robot Grasping", 2023, "CoRL", ["rossi", "mueller", "moreau"], 66,
     "Transparent and shiny objects defeat depth sensors. We reconstruct them with neural radiance fields from a wrist camera and plan grasps on the reconstruction."),
    ("offline_rl", "Offline RL for Legged Locomotion: A Benchmark", 2020, "ICRA", ["mensah", "mueller", "obi"], 205,
     "We release logged locomotion data from three legged robots and benchmark offline reinforcement learning algorithms on it."),
    ("mvs_wild", "Multi-View Stereo in the Wild", 2014, "CVPR", ["moreau", "fournier"], 1540,
     "We reconstruct dense 3D models from unstructured internet photo collections with a multi-view stereo method robust to illumination changes and occluders."),
    ("event_vo", "Event-Based Visual Odometry at 1000 Hz", 2019, "IEEE Robotics and Automation Letters", ["marchetti", "moreau"], 180,
     "Using an event camera, we estimate camera motion at one kilohertz with an asynchronous filter, which helps drones during fast manoeuvres."),
    ("gaze_graphs", "Gaze-Contingent Visual Analytics for Large Graphs", 2019, "IEEE VIS", ["ilic", "schaefer"], 180,
     "We adapt the level of detail of large graph drawings to where the analyst is looking, measured by an eye tracker, and evaluate the approach in a user study."),
    ("eye_tracking_survey", "Eye Tracking in Visualization Research: A Survey", 2016, "Computer Graphics Forum", ["schaefer", "ilic", "baum"], 620,
     "We survey how eye tracking has been used to evaluate and to drive visualisations, classify 200 papers, and list open challenges."),
    ("trust_explanations", "Do Users Trust Explanations They Cannot See?", 2024, "CHI", ["weber", "ilic", "schaefer"], 12,
     "In two experiments we show that people trust visual explanations of AI decisions more even when they fail to read them correctly."),
    ("volume_flow", "Volume Rendering for Flow Fields on the GPU", 2009, "IEEE TVCG", ["baum", "schaefer"], 340,
     "We render 3D flow fields interactively on graphics hardware with a volume rendering technique that highlights vortices."),
    ("session_music", "Session-Aware Music Recommendation at Scale", 2020, "RecSys", ["gutierrez", "okafor", "sandberg"], 330,
     "We model the listening session as context for music recommendation and deploy the model to hundreds of millions of users, improving skip rates."),
    ("lyrics_playlist", "Listening Between the Lines: Lyrics-Aware Playlist Continuation", 2022, "ISMIR", ["okafor", "gutierrez", "blom"], 75,
     "We continue playlists using the themes of song lyrics in addition to audio and co-listening, which helps for new tracks."),
    ("chill", "What Did You Mean by 'Chill'? Conversational Music Search", 2024, "SIGIR", ["svensson", "gutierrez", "sandberg"], 9,
     "Users describe music with vague words such as chill. We study clarifying questions in conversational music search and learn when to ask them."),
    ("incremental_mf", "Incremental Matrix Factorization over Event Streams", 2015, "RecSys", ["sandberg", "lindqvist", "nystrom"], 410,
     "We update matrix factorisation models for recommendation as interaction events arrive, using a distributed stream processor."),
    ("ab_interference", "A/B Testing Recommendation Algorithms Under Interference", 2023, "KDD", ["blom", "gutierrez", "goldstein"], 33,
     "Users in an A/B test influence each other through shared playlists. We design cluster-randomised experiments that reduce this bias."),
    ("amortized", "Amortized Inference for Probabilistic Programs with Stochastic Control Flow", 2016, "ICML", ["whitfield", "lindholm"], 720,
     "We train neural proposals for probabilistic programs whose control flow depends on random choices, speeding up inference by orders of magnitude."),
    ("interference", "Causal Effect Estimation under Interference: A Bayesian Nonparametric View", 2020, "Journal of the American Statistical Association", ["natarajan", "whitfield"], 210,
     "We estimate causal effects when one unit's treatment affects others, with a Bayesian nonparametric model of exposure."),
    ("fair_ranking", "Fair Ranking Needs Causal Assumptions", 2022, "FAccT", ["natarajan", "iyer", "goldstein", "lindholm"], 140,
     "We show that common fairness criteria for rankings can disagree unless one states causal assumptions, and give a causal framework to choose among them."),
    ("discrete_latent", "Gradient-Based Inference for Discrete Latent Programs", 2023, "AISTATS", ["herrera", "whitfield"], 25,
     "We relax discrete random choices in probabilistic programs to obtain gradients for variational inference, with a bias correction."),
    ("verified_compilation", "Verified Compilation of Probabilistic Programs", 2019, "POPL", ["leroy", "whitfield"], 77,
     "We prove in Coq that a compiler from a probabilistic language to a sampling machine preserves the distribution of program outputs."),
    ("token_merging", "Token Merging Without Retraining for Vision Transformers", 2023, "ICCV", ["yangjw", "hanqing", "wenjh"], 190,
     "We merge similar tokens inside a pretrained vision transformer at inference time, doubling throughput with little accuracy loss and no retraining."),
    ("hard_region", "Contrastive Pretraining with Hard Region Mining", 2020, "ECCV", ["hanqing", "yangjw"], 880,
     "We improve contrastive pretraining of image encoders by mining hard image regions as negatives, which helps detection and segmentation transfer."),
    ("temporal_jigsaw", "Self-Supervised Video Representation via Temporal Jigsaw", 2021, "CVPR", ["wenjh", "hanqing"], 240,
     "We learn video representations by asking a network to put shuffled clips back in order, and report gains on action recognition."),
    ("once_for_all", "Once-for-All Search Spaces on a Budget", 2021, "NeurIPS", ["parkjh", "kimsj", "choi"], 260,
     "We shrink the search space of weight-sharing architecture search before training the supernet, which cuts search cost by an order of magnitude."),
    ("systolic", "Systolic Arrays for Sparse Attention", 2019, "ISCA", ["leedh", "kimsj", "kwon"], 310,
     "We design a systolic array that skips zero blocks in sparse attention matrices and evaluate it on transformer inference workloads."),
    ("latency_nas", "Latency-Aware NAS for On-Device Vision Transformers", 2023, "CVPR", ["kimsj", "parkjh", "yangjw"], 95,
     "We search vision transformer architectures under measured latency on phones and find models that beat hand-designed ones at equal speed."),
    ("sparse_tensor", "Hardware Support for Sparse Tensor Algebra", 2016, "MICRO", ["leedh", "kwon"], 480,
     "We add hardware units for intersecting sparse index streams to a general-purpose processor, speeding up sparse tensor kernels."),
    ("sparse_attention", "Sparse Attention: When Less Is More?", 2021, "NeurIPS", ["heyang", "castellanos", "dubois"], 310,
     "We ask when sparse attention patterns beat dense attention in language models and find that sparsity helps on long documents but hurts on short reasoning tasks."),
    ("kv_cache", "Quantized KV Caches for Long-Context Language Models", 2024, "ICLR", ["castellanos", "heyang"], 58,
     "We quantise the key-value cache of language models to three bits with per-channel scaling, enabling contexts four times longer on the same memory."),
    ("denoising_200", "Multilingual Denoising for 200 Languages? Lessons from Scaling", 2022, "TACL", ["dubois", "vdberg", "heyang"], 420,
     "We pretrain a denoising sequence-to-sequence model on 200 languages and analyse which languages benefit and which suffer from the scale."),
    ("lidar_uncertainty", "Calibrated Uncertainty for LiDAR Detectors Under Distribution Shift", 2021, "IEEE Intelligent Vehicles Symposium", ["delacruz", "brandt", "hartmann"], 140,
     "We calibrate the confidence of LiDAR 3D object detectors when weather and sensors change, using post-hoc temperature scaling per class."),
    ("laplace_vit", "Laplace Approximations for Vision Transformers: Cheap and Cheerful?", 2022, "UAI", ["delacruz", "meissner"], 96,
     "We apply last-layer Laplace approximations to vision transformers and find they give calibrated uncertainty at almost no cost."),
    ("inducing_traj", "Sparse Gaussian Processes with Inducing Trajectories", 2014, "JMLR", ["meissner", "holloway"], 1200,
     "We extend sparse Gaussian process approximations with inducing points that move along trajectories, which suits time-dependent data."),
    ("implicit_bias", "Implicit Bias of Adaptive Optimizers: A Tale of Two Norms", 2017, "NeurIPS", ["holloway", "petrov"], 610,
     "We characterise the solutions that adaptive gradient methods converge to on separable data and relate them to different norms."),
    ("bandits_delay", "Regret Bounds for Non-Stationary Bandits with Delayed Feedback", 2020, "COLT", ["demir", "petrov", "holloway"], 95,
     "We prove regret bounds for multi-armed bandits whose rewards drift over time and arrive with delay, and give a matching algorithm."),
    ("contact_maps", "Protein Contact Maps from Single Sequences: Are MSAs Still Needed?", 2022, "Bioinformatics", ["nunez", "valdes", "araya"], 88,
     "We predict protein contact maps from single sequences with a protein language model and compare with methods that use multiple sequence alignments."),
    ("sc_denoising", "Denoising Single-Cell Counts with Variational Autoencoders", 2019, "Nature Methods", ["adeyemi", "goldberg", "eze"], 970,
     "We denoise single-cell RNA sequencing counts with a variational autoencoder that models dropout, improving clustering and differential expression."),
    ("sc_transfer", "Transfer Learning Across Single-Cell Atlases", 2021, "Genome Biology", ["adeyemi", "nunez", "goldberg"], 240,
     "We transfer cell type annotations between single-cell atlases of different species and technologies with a shared latent space."),
    ("banded_alignment", "Fast Banded Alignment for Long Noisy Reads", 2017, "Bioinformatics", ["araya", "nunez"], 130,
     "We align long, error-prone sequencing reads quickly with an adaptive banded dynamic programming algorithm."),
    ("edo_prints", "Reading Edo-Period Woodblock Prints with Transformers", 2021, "ICDAR", ["satoh", "fujimoto", "yamamoto"], 52,
     "We transcribe text on Edo-period woodblock prints with a transformer recogniser trained on synthetic and annotated pages."),
    ("cursive_japanese", "Recognizing Cursive Japanese Script at Scale: A Dataset and Baselines", 2019, "ICDAR Workshops", ["yamamoto", "satoh", "tanabe"], 310,
     "We release a large dataset of cursive pre-modern Japanese characters with baselines, to help scholars read historical documents."),
    ("spn_cardinality", "Cardinality Estimation with Sum-Product Networks? A Reality Check", 2022, "SIGMOD", ["kulkarni", "krishnamurthy", "deshpande"], 70,
     "We test learned cardinality estimators based on sum-product networks on real workloads and find their errors grow with join count."),
    ("joinable_tables", "Data Lake Discovery with Joinable Table Search", 2018, "PVLDB", ["krishnamurthy", "divya"], 350,
     "We find tables in a data lake that can be joined with a query table using a sketch-based index over column values."),
    ("light_gcn_cold", "Light Graph Convolution for Cold-Start Recommendation", 2020, "SIGIR", ["huangzh", "tanbk", "wulei"], 560,
     "We simplify graph convolution for recommendation and add feature-based propagation so that new users and items get useful embeddings."),
    ("causal_rec_zh", "基于因果推断的推荐系统去偏方法", 2023, "软件学报", ["chenghr", "huangzh", "yeqy"], 31,
     "推荐系统的训练数据存在流行度偏差。本文基于因果推断构建反事实推理框架，对流行度偏差进行消除，在三个公开数据集上取得了更好的推荐效果。"),
    ("bundle_rec", "Hypergraph Contrastive Learning for Bundle Recommendation", 2022, "WWW", ["linyx", "huangzh", "wulei"], 120,
     "We model users, bundles and items as a hypergraph and train it with contrastive learning to recommend bundles."),
    ("cross_modal_hashing", "Multimedia Retrieval with Cross-Modal Hashing", 2012, "ACM Multimedia", ["tanbk", "subramanian"], 1450,
     "We learn binary codes shared by images and text so that one can retrieve images with text queries and vice versa at high speed."),
    ("llm_bugs", "Can Large Language Models Fix Real Bugs? An Empirical Study on Defects4J", 2023, "ICSE", ["gujia", "xuyf", "wanglei_fudan"], 290,
     "We evaluate large language models on repairing real Java bugs from Defects4J and analyse which bugs they fix and why plausible patches are often wrong."),
    ("js_fuzzing", "Grammar-Aware Greybox Fuzzing for JavaScript Engines", 2019, "USENIX Security", ["xuyf", "wanglei_fudan"], 250,
     "We fuzz JavaScript engines with a greybox fuzzer that mutates syntax trees, finding 40 previously unknown bugs."),
    ("patch_correctness", "Patch Correctness Assessment via Test Generation", 2020, "ESEC/FSE", ["wanglei_fudan", "xuyf", "panxr"], 180,
     "We judge whether automatically generated patches are correct by generating new tests that distinguish patched from original behaviour."),
    ("emergent_comm", "Emergent Communication Under Partial Observability", 2021, "ICLR", ["mehta", "mcallister"], 150,
     "Agents that see only part of the world learn to communicate. We show which environment properties make the learned language compositional."),
    ("equilibrium_selection", "Equilibrium Selection in Many-Player Games: A Learning Perspective", 2018, "AAMAS", ["mcallister", "tremblay"], 260,
     "We study which equilibrium independent learners reach in games with many players, and characterise it by basin sizes."),
    ("deadlines", "Who Blinks First? Learning to Negotiate Deadlines", 2024, "AAAI", ["mehta", "tremblay", "mcallister"], 6,
     "We train negotiating agents under deadlines and find they learn to concede at the last moment unless deadlines are hidden."),
    ("neural_auctions", "Scalable Mechanism Design with Neural Auctions", 2022, "EC", ["tremblay", "ouellet"], 58,
     "We learn auction mechanisms with neural networks for many bidders and items while keeping them approximately incentive compatible."),
    ("ann_disk", "Graph-Based ANN Search on Disk: How Far Can We Go?", 2023, "PVLDB", ["jiangxy", "qianwb", "daizy"], 40,
     "We study graph-based approximate nearest neighbour search when the index does not fit in memory and propose a layout that halves disk reads."),
    ("gaussian_splats", "Gaussian Splats for Outdoor Scenes? A Robustness Study", 2024, "3DV", ["garnier", "fournier", "roux"], 14,
     "We test Gaussian splatting on outdoor scenes with changing light and transient objects and propose simple fixes for its failure cases."),
    ("bundle_adjustment", "Proximal Methods for Bundle Adjustment", 2011, "ICCV", ["fournier", "roux"], 820,
     "We solve large bundle adjustment problems with proximal splitting methods that parallelise over cameras and points."),
    ("fl_survey", "Communication-Efficient Federated Learning at the Edge: A Survey", 2021, "IEEE Communications Surveys & Tutorials", ["lichen_sjtu", "sunyq", "liusy"], 690,
     "We survey methods that reduce communication in federated learning on edge devices, including compression, client selection and asynchronous updates."),
    ("async_llm_fl", "Asynchronous Federated Fine-Tuning of Large Language Models", 2024, "MLSys", ["sunyq", "lichen_sjtu", "zhanghy"], 22,
     "We fine-tune large language models across clients that finish rounds at different times, using asynchronous adapter aggregation."),
    ("mandarin_tts", "Expressive Mandarin TTS with Prosody Tokens", 2021, "Interspeech", ["wanglei_baidu", "tianhao", "zhanghy"], 63,
     "We control the prosody of Mandarin text-to-speech with discrete tokens learned from unlabelled speech."),
    ("rag_ecommerce", "Retrieval-Augmented Generation for E-commerce Search", 2023, "KDD", ["zhanghy", "zhaogd", "konglx"], 88,
     "We use retrieval-augmented generation to rewrite and answer shopping queries, and report online results from a large e-commerce platform."),
    ("straggler", "Straggler-Tolerant Aggregation for Edge Federated Learning", 2019, "INFOCOM", ["lichen_sjtu", "zhumq"], 300,
     "We aggregate model updates in federated learning without waiting for slow devices, with convergence guarantees."),
    ("neural_code_search", "Neural Code Search with Contrastive Pretraining", 2022, "ACL", ["liangyt", "zhaogd"], 95,
     "We pretrain code and natural language encoders contrastively for code search and release a benchmark of real developer queries."),
    ("sdn_anomaly_zh", "面向软件定义网络的异常流量检测方法", 2018, "通信学报", ["hanbing", "sima", "luojm"], 60,
     "针对软件定义网络中的异常流量，提出一种基于流表统计特征的检测方法，能够在控制器端实时发现攻击流量。"),
    ("encrypted_ids", "Learning-Based Intrusion Detection for Encrypted Traffic: A Critical Evaluation", 2022, "NDSS", ["hexf", "hanbing", "sima"], 110,
     "We re-evaluate learning-based intrusion detectors for encrypted traffic and show that many reported results stem from dataset artefacts."),
    ("bgp_hijacks", "Measuring BGP Hijacks from the Data Plane", 2015, "IMC", ["sima", "hanbing"], 230,
     "We detect BGP prefix hijacks by measuring data-plane paths from many vantage points rather than relying on routing tables."),
    ("event_args_zh", "事件抽取中的论元角色联合建模", 2021, "中文信息学报", ["songkx", "qinjh"], 25,
     "提出一种对事件论元及其角色进行联合建模的方法，缓解了论元角色之间相互依赖带来的错误传播问题。"),
    ("dst_schema", "Task-Oriented Dialogue State Tracking with Schema Graphs", 2020, "ACL", ["qinjh", "macleod", "baixue"], 190,
     "We track dialogue states by encoding the service schema as a graph, which helps on unseen domains."),
    ("open_ie_zh", "Open Information Extraction for Chinese Encyclopedias", 2016, "COLING", ["qinjh"], 240,
     "We extract open-domain relation triples from Chinese encyclopedia pages with a bootstrapping method and release the resulting knowledge base."),
    ("epidemic_memory", "Epidemic Thresholds on Temporal Networks with Memory", 2019, "Physical Review E", ["zanetti", "albuquerque"], 170,
     "We derive epidemic thresholds for temporal contact networks in which nodes tend to repeat past contacts."),
    ("visibility_graphs", "Visibility Graphs for Anomaly Detection in Industrial Time Series", 2022, "Pattern Recognition", ["fernandez", "albuquerque"], 45,
     "We turn sensor time series into visibility graphs and detect anomalies from changes in graph statistics."),
    ("legged_state", "State Estimation for Legged Robots on Deformable Terrain", 2021, "IROS", ["kaelin", "voegele"], 60,
     "We estimate the state of a walking robot on sand and snow by modelling foot sinkage in the filter."),
    ("semantic_lexicons", "Semantic Parsing with Compositional Lexicons", 2013, "EMNLP", ["fraser", "macleod"], 205,
     "We learn lexicons for semantic parsing whose entries combine compositionally, improving generalisation to longer questions."),
    ("hokkien", "Joint Speech Recognition and Translation for Taiwanese Hokkien", 2023, "Interspeech", ["tsai", "obrien"], 11,
     "We recognise and translate Taiwanese Hokkien speech jointly, since the language has no standard written form."),
]
